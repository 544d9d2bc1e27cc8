//! `spec.groups`: references checked, cycles refused, members resolved, roles assigned.

use std::collections::{BTreeMap, HashMap};

use bundle_spec::diagnostics::SourceLocation;
use bundle_spec::diagnostics::suggest::closest;
use bundle_spec::manifest::SpannedMap;
use serde_saphyr::Spanned;

use super::InventoryError;
use super::document::Context;
use super::inventory::{Group, Host, K8S_CLUSTER, Role};
use super::raw::RawGroup;

/// A group whose references are indexes: hosts into the host list, groups into this list.
struct Linked {
    group: Group,
    hosts: Vec<usize>,
    children: Vec<(usize, SourceLocation)>,
}

/// `spec.groups`, in file order (an implied `k8s_cluster` last), with roles set on `hosts`.
pub(super) fn validate(
    cx: &mut Context,
    raw: SpannedMap<Spanned<Option<RawGroup>>>,
    hosts: &mut [Host],
    spec_at: &SourceLocation,
) -> Result<Vec<Group>, InventoryError> {
    let mut linked = link(cx, raw, hosts)?;
    if let Some((cycle, at)) = find_cycle(&linked) {
        let names: Vec<String> = cycle
            .iter()
            .map(|&index| format!("`{}`", linked[index].group.name))
            .collect();
        return Err(InventoryError::GroupCycle {
            at,
            cycle: names.join(" → "),
        });
    }
    imply_k8s_cluster(&mut linked, spec_at);
    let mut memo = vec![None; linked.len()];
    for index in 0..linked.len() {
        linked[index].group.members = members(&linked, index, &mut memo);
    }
    let groups: Vec<Group> = linked.into_iter().map(|linked| linked.group).collect();
    check_every_host_grouped(&groups, hosts)?;
    assign_roles(&groups, hosts);
    check_nodes_in_cluster(&groups, hosts)?;
    Ok(groups)
}

/// Reads each group and resolves its names to indexes, suggesting the closest name for a
/// reference to nothing.
fn link(
    cx: &mut Context,
    raw: SpannedMap<Spanned<Option<RawGroup>>>,
    hosts: &[Host],
) -> Result<Vec<Linked>, InventoryError> {
    let group_names: Vec<String> = raw.0.iter().map(|(name, _)| name.value.clone()).collect();
    let names = Names {
        hosts: hosts.iter().map(|host| host.name.as_str()).collect(),
        groups: group_names.iter().map(String::as_str).collect(),
    };
    raw.0
        .into_iter()
        .map(|(name, group)| link_one(cx, &names, name, group.value.unwrap_or_default()))
        .collect()
}

/// The names a group may refer to.
struct Names<'a> {
    hosts: Vec<&'a str>,
    groups: Vec<&'a str>,
}

fn link_one(
    cx: &mut Context,
    names: &Names<'_>,
    name: Spanned<String>,
    group: RawGroup,
) -> Result<Linked, InventoryError> {
    cx.drop_extra(group.extra, RawGroup::FIELDS, &format!("{}.", name.value));
    let host_refs = group.hosts.unwrap_or_default();
    let child_refs = group.groups.unwrap_or_default();
    let position = |entry: &Spanned<String>, candidates: &[&str]| {
        candidates
            .iter()
            .position(|candidate| *candidate == entry.value)
    };
    let hosts = host_refs
        .iter()
        .map(|entry| {
            position(entry, &names.hosts).ok_or_else(|| InventoryError::UnknownHost {
                at: cx.at(entry),
                group: name.value.clone(),
                host: entry.value.clone(),
                suggestion: closest(&entry.value, &names.hosts).map(str::to_owned),
            })
        })
        .collect::<Result<_, _>>()?;
    let children = child_refs
        .iter()
        .map(|entry| {
            let index =
                position(entry, &names.groups).ok_or_else(|| InventoryError::UnknownGroup {
                    at: cx.at(entry),
                    group: name.value.clone(),
                    member: entry.value.clone(),
                    suggestion: closest(&entry.value, &names.groups).map(str::to_owned),
                })?;
            Ok((index, cx.at(entry)))
        })
        .collect::<Result<_, InventoryError>>()?;
    Ok(Linked {
        group: Group {
            location: cx.at(&name),
            hosts: host_refs.into_iter().map(|entry| entry.value).collect(),
            groups: child_refs.into_iter().map(|entry| entry.value).collect(),
            vars: group.vars.unwrap_or_default(),
            name: name.value,
            members: Vec::new(),
        },
        hosts,
        children,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    New,
    Active,
    Done,
}

/// A cycle of nested groups, as the groups on it (the first repeated at the end) and where
/// the reference closing it is.
fn find_cycle(linked: &[Linked]) -> Option<(Vec<usize>, SourceLocation)> {
    let mut state = vec![Visit::New; linked.len()];
    let mut stack = Vec::new();
    (0..linked.len()).find_map(|start| visit(linked, start, &mut state, &mut stack))
}

fn visit(
    linked: &[Linked],
    index: usize,
    state: &mut [Visit],
    stack: &mut Vec<usize>,
) -> Option<(Vec<usize>, SourceLocation)> {
    if state[index] != Visit::New {
        return None;
    }
    state[index] = Visit::Active;
    stack.push(index);
    for (child, at) in &linked[index].children {
        if state[*child] == Visit::Active {
            let start = stack.iter().position(|open| open == child).unwrap_or(0);
            let mut cycle = stack[start..].to_vec();
            cycle.push(*child);
            return Some((cycle, at.clone()));
        }
        if let Some(found) = visit(linked, *child, state, stack) {
            return Some(found);
        }
    }
    stack.pop();
    state[index] = Visit::Done;
    None
}

/// Without a `k8s_cluster` group, every control-plane node and worker is a cluster node.
fn imply_k8s_cluster(linked: &mut Vec<Linked>, spec_at: &SourceLocation) {
    if linked.iter().any(|linked| linked.group.name == K8S_CLUSTER) {
        return;
    }
    let children: Vec<(usize, SourceLocation)> = [Role::ControlPlane, Role::Worker]
        .into_iter()
        .filter_map(|role| {
            let index = linked.iter().position(|l| l.group.name == role.group())?;
            Some((index, spec_at.clone()))
        })
        .collect();
    let names = children
        .iter()
        .map(|(index, _)| linked[*index].group.name.clone())
        .collect();
    linked.push(Linked {
        group: Group {
            name: K8S_CLUSTER.to_owned(),
            hosts: Vec::new(),
            groups: names,
            vars: BTreeMap::new(),
            location: spec_at.clone(),
            members: Vec::new(),
        },
        hosts: Vec::new(),
        children,
    });
}

/// The hosts of group `index`: its own in order, then each child's, each once. The groups
/// form no cycle, so the recursion ends; `memo` keeps shared subgroups linear.
fn members(linked: &[Linked], index: usize, memo: &mut [Option<Vec<usize>>]) -> Vec<usize> {
    if let Some(done) = &memo[index] {
        return done.clone();
    }
    let mut result: Vec<usize> = Vec::new();
    let mut add = |host: usize| {
        if !result.contains(&host) {
            result.push(host);
        }
    };
    linked[index].hosts.iter().copied().for_each(&mut add);
    for (child, _) in &linked[index].children {
        members(linked, *child, memo).into_iter().for_each(&mut add);
    }
    memo[index] = Some(result.clone());
    result
}

/// A host no group lists would never be installed: almost certainly a forgotten entry.
fn check_every_host_grouped(groups: &[Group], hosts: &[Host]) -> Result<(), InventoryError> {
    let grouped = |index: usize| groups.iter().any(|group| group.members.contains(&index));
    match (0..hosts.len()).find(|index| !grouped(*index)) {
        Some(index) => Err(InventoryError::HostInNoGroup {
            at: hosts[index].location.clone(),
            host: hosts[index].name.clone(),
        }),
        None => Ok(()),
    }
}

fn assign_roles(groups: &[Group], hosts: &mut [Host]) {
    for role in Role::ALL {
        let Some(group) = groups.iter().find(|group| group.name == role.group()) else {
            continue;
        };
        for &index in &group.members {
            hosts[index].roles.insert(role);
        }
    }
}

/// Control-plane nodes and workers need a runtime and a kubelet, which `k8s_cluster` gets.
fn check_nodes_in_cluster(groups: &[Group], hosts: &[Host]) -> Result<(), InventoryError> {
    let by_name: HashMap<&str, &Group> = groups.iter().map(|g| (g.name.as_str(), g)).collect();
    let Some(cluster) = by_name.get(K8S_CLUSTER) else {
        return Ok(());
    };
    for role in [Role::ControlPlane, Role::Worker] {
        let Some(group) = by_name.get(role.group()) else {
            continue;
        };
        if let Some(&index) = group.members.iter().find(|i| !cluster.members.contains(i)) {
            return Err(InventoryError::NotInCluster {
                at: cluster.location.clone(),
                host: hosts[index].name.clone(),
                group: role.group(),
            });
        }
    }
    Ok(())
}
