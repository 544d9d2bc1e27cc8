//! The install order of a closure: every package after those it depends on, cycles broken
//! deterministically.

use std::collections::{BTreeMap, BTreeSet};

/// A dependency edge of the closure: which selected package a group was satisfied by.
#[derive(Debug, Clone, Copy)]
pub(super) struct Edge {
    /// The selected package that satisfies the group.
    pub(super) to: usize,
    /// Whether the group is a `Pre-Depends`.
    pub(super) pre: bool,
}

/// The selected packages (in selection order) with their edges, in install order:
/// dependencies first (Tarjan's strongly connected components come out dependencies first);
/// inside a cycle, [`Graph::cycle_order`].
pub(super) fn install_order(selected: &[usize], edges: &BTreeMap<usize, Vec<Edge>>) -> Vec<usize> {
    let mut tarjan = Tarjan::default();
    for &index in selected {
        if !tarjan.index.contains_key(&index) {
            tarjan.visit(index, edges);
        }
    }
    let graph = Graph { selected, edges };
    tarjan
        .components
        .into_iter()
        .flat_map(|component| graph.cycle_order(component))
        .collect()
}

struct Graph<'a> {
    selected: &'a [usize],
    edges: &'a BTreeMap<usize, Vec<Edge>>,
}

impl Graph<'_> {
    /// The order inside a strongly connected component (a cycle): a depth-first walk that puts
    /// each package after what it reaches, breaking the cycle where it closes. It starts from
    /// the packages no member pre-depends on, so that the edge that closes the cycle is a
    /// `Depends` wherever one can be: `Pre-Depends` must hold, a `Depends` cycle is installed
    /// in one go anyway.
    fn cycle_order(&self, mut component: Vec<usize>) -> Vec<usize> {
        if component.len() == 1 {
            return component;
        }
        let position = |index: usize| self.selected.iter().position(|&i| i == index);
        let pre_depended = |index: usize| {
            component.iter().any(|from| {
                self.edges(*from)
                    .iter()
                    .any(|edge| edge.pre && edge.to == index)
            })
        };
        let keys: BTreeMap<usize, (bool, Option<usize>)> = component
            .iter()
            .map(|&index| (index, (pre_depended(index), position(index))))
            .collect();
        component.sort_by_key(|index| keys[index]);
        let mut order = Vec::new();
        let mut seen = BTreeSet::new();
        for &start in &component {
            self.walk(start, &component, &mut seen, &mut order);
        }
        order
    }

    fn walk(
        &self,
        index: usize,
        component: &[usize],
        seen: &mut BTreeSet<usize>,
        order: &mut Vec<usize>,
    ) {
        if !seen.insert(index) {
            return;
        }
        let edges = self.edges(index);
        // Pre-Depends first, so that a cycle closes on a Depends where it can.
        for edge in edges
            .iter()
            .filter(|e| e.pre)
            .chain(edges.iter().filter(|e| !e.pre))
        {
            if component.contains(&edge.to) {
                self.walk(edge.to, component, seen, order);
            }
        }
        order.push(index);
    }

    fn edges(&self, index: usize) -> &[Edge] {
        self.edges
            .get(&index)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// Tarjan's strongly connected components, emitted dependencies first.
#[derive(Default)]
struct Tarjan {
    next: usize,
    index: BTreeMap<usize, usize>,
    low: BTreeMap<usize, usize>,
    stack: Vec<usize>,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, node: usize, edges: &BTreeMap<usize, Vec<Edge>>) {
        self.index.insert(node, self.next);
        self.low.insert(node, self.next);
        self.next += 1;
        self.stack.push(node);
        for edge in edges.get(&node).into_iter().flatten() {
            if !self.index.contains_key(&edge.to) {
                self.visit(edge.to, edges);
                let low = self.low[&node].min(self.low[&edge.to]);
                self.low.insert(node, low);
            } else if self.stack.contains(&edge.to) {
                let low = self.low[&node].min(self.index[&edge.to]);
                self.low.insert(node, low);
            }
        }
        if self.low[&node] == self.index[&node] {
            let at = self
                .stack
                .iter()
                .rposition(|&n| n == node)
                .unwrap_or_default();
            self.components.push(self.stack.split_off(at));
        }
    }
}
