//! The [`Report`]: results by node and for the cluster, as JSON or as a table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{CheckResult, SET_BY, Status, WAIVED};

/// What [`super::evaluate`] found.
///
/// JSON: `{"nodes": {"node1": [{"id", "status", "message"}, …]}, "cluster": [ … ]}`; `status`
/// is `pass`, `set` (set by the install, see [`Status::SetByInstall`]), `warn`, `fail` or
/// `skip`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Node rules, by inventory host name; one result per rule, in the same order for every
    /// node. Unreachable hosts are absent.
    pub nodes: BTreeMap<String, Vec<CheckResult>>,
    /// Cluster rules.
    pub cluster: Vec<CheckResult>,
}

impl Report {
    /// Whether any rule failed (waived rules are `skip`, so they never fail).
    pub fn failed(&self) -> bool {
        self.all().any(|r| r.status == Status::Fail)
    }

    /// The report as JSON, the shape [`Report`] documents.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// One table of checks (rows) by nodes (columns), then what the install sets on each
    /// node (`set` results, with what the node has now), then the message of every node
    /// result that is a warning, a failure or waived (a skip because a rule does not apply is
    /// only marked `skip`, and a waived rule that would pass is not repeated), then every
    /// cluster result, then a summary line.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        self.render_grid(&mut out);
        self.render_set(&mut out);
        self.render_problems(&mut out);
        self.render_cluster(&mut out);
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    fn all(&self) -> impl Iterator<Item = &CheckResult> {
        self.nodes.values().flatten().chain(&self.cluster)
    }

    /// Rule ids in first-seen order.
    fn node_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for result in self.nodes.values().flatten() {
            if !ids.contains(&result.id.as_str()) {
                ids.push(&result.id);
            }
        }
        ids
    }

    fn render_grid(&self, out: &mut String) {
        if self.nodes.is_empty() {
            out.push_str("no reachable nodes\n\n");
            return;
        }
        let ids = self.node_ids();
        let first = ids
            .iter()
            .map(|id| id.len())
            .max()
            .unwrap_or(0)
            .max("CHECK".len());
        let widths: Vec<usize> = self.nodes.keys().map(|n| n.len().max(4)).collect();
        let mut row = |cells: Vec<&str>| {
            let mut line = format!("{:first$}", cells[0]);
            for (cell, width) in cells[1..].iter().zip(&widths) {
                let _ = write!(line, "  {cell:width$}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        };
        row(std::iter::once("CHECK")
            .chain(self.nodes.keys().map(String::as_str))
            .collect());
        for id in &ids {
            let cells = self.nodes.values().map(|results| {
                results
                    .iter()
                    .find(|r| r.id == *id)
                    .map_or("", |r| r.status.as_str())
            });
            row(std::iter::once(*id).chain(cells).collect());
        }
        out.push('\n');
    }

    /// The `set` results, by node: not problems, but what the install will change.
    fn render_set(&self, out: &mut String) {
        let mut any = false;
        for (node, results) in &self.nodes {
            for result in results.iter().filter(|r| r.status == Status::SetByInstall) {
                if !any {
                    out.push_str(
                        "SET BY THE INSTALL (kk's os and packages phases set these, then check them again)\n",
                    );
                    any = true;
                }
                // What follows the prefix reads on its own: what the node has now (the os
                // phase's), or what the install brings (the packages phase's).
                let set = result
                    .message
                    .strip_prefix(SET_BY)
                    .unwrap_or(&result.message);
                let _ = writeln!(out, "  {node}  {}: {set}", result.id);
            }
        }
        if any {
            out.push('\n');
        }
    }

    fn render_problems(&self, out: &mut String) {
        let notable = |r: &&CheckResult| {
            matches!(r.status, Status::Warn | Status::Fail)
                || (r.message.starts_with(WAIVED) && !r.message.contains("(would be pass:"))
        };
        let mut any = false;
        for (node, results) in &self.nodes {
            for result in results.iter().filter(notable) {
                if !any {
                    out.push_str("NODE PROBLEMS\n");
                    any = true;
                }
                let _ = writeln!(
                    out,
                    "  {:4}  {node}  {}: {}",
                    result.status.as_str(),
                    result.id,
                    result.message
                );
            }
        }
        if any {
            out.push('\n');
        }
    }

    fn render_cluster(&self, out: &mut String) {
        out.push_str("CLUSTER\n");
        for result in &self.cluster {
            let _ = writeln!(
                out,
                "  {:4}  {}: {}",
                result.status.as_str(),
                result.id,
                result.message
            );
        }
        out.push('\n');
    }

    fn summary(&self) -> String {
        let count = |status| self.all().filter(|r| r.status == status).count();
        let waived = self.all().filter(|r| r.message.starts_with(WAIVED)).count();
        let (failed, warned) = (count(Status::Fail), count(Status::Warn));
        let set = count(Status::SetByInstall);
        let verdict = if failed > 0 {
            "precheck failed"
        } else {
            "precheck passed"
        };
        let nodes = self.nodes.len();
        let plural = if nodes == 1 { "" } else { "s" };
        // Only when there are some: most reports (a rerun, `precheck` after an install) have
        // none, and the line stays as it was.
        let set = if set > 0 {
            format!(", {set} set by the install")
        } else {
            String::new()
        };
        let mut line = format!(
            "{verdict}: {nodes} node{plural}, {failed} failed, {warned} warnings{set}, {waived} waived"
        );
        if failed > 0 {
            line.push_str(" (fix them, or waive a rule with `--ignore ID`)");
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precheck::CheckResult as R;

    fn small() -> Report {
        Report {
            nodes: BTreeMap::from([
                (
                    "node1".to_owned(),
                    vec![
                        R::pass("os.arch", "amd64"),
                        R::pass("kubeadm.port.6443", "6443 free for kube-apiserver"),
                        R::pass("kubeadm.swap", "swap is off"),
                        R::new(
                            "nfs.client",
                            Status::SetByInstall,
                            "set by the install: `mount.nfs` (package nfs-common from the bundle)",
                        ),
                    ],
                ),
                (
                    "worker-long".to_owned(),
                    vec![
                        R::fail("os.arch", "architecture `riscv64` is not supported"),
                        R::skip("kubeadm.port.6443", "not a control-plane node"),
                        R::new(
                            "kubeadm.swap",
                            Status::SetByInstall,
                            "set by the install: now swap is on (2048 MiB)",
                        ),
                        R::pass("nfs.client", "`mount.nfs` is there"),
                    ],
                ),
            ]),
            cluster: vec![
                R::pass("kubernetes.version", "v1.31.4"),
                R::skip(
                    "nfs.server_count",
                    "waived by --ignore `nfs` (would be fail: 2 hosts)",
                ),
            ],
        }
    }

    #[test]
    fn renders_one_table_then_problems_then_the_cluster() {
        let expected = "\
CHECK              node1  worker-long
os.arch            pass   fail
kubeadm.port.6443  pass   skip
kubeadm.swap       pass   set
nfs.client         set    pass

SET BY THE INSTALL (kk's os and packages phases set these, then check them again)
  node1  nfs.client: `mount.nfs` (package nfs-common from the bundle)
  worker-long  kubeadm.swap: now swap is on (2048 MiB)

NODE PROBLEMS
  fail  worker-long  os.arch: architecture `riscv64` is not supported

CLUSTER
  pass  kubernetes.version: v1.31.4
  skip  nfs.server_count: waived by --ignore `nfs` (would be fail: 2 hosts)

precheck failed: 2 nodes, 1 failed, 0 warnings, 2 set by the install, 1 waived (fix them, or waive a rule with `--ignore ID`)
";
        assert_eq!(small().render_table(), expected);
    }

    #[test]
    fn json_shape() {
        let json = small().to_json();
        assert_eq!(
            json["nodes"]["node1"][0],
            serde_json::json!({"id": "os.arch", "status": "pass", "message": "amd64"})
        );
        assert_eq!(json["nodes"]["worker-long"][1]["status"], "skip");
        assert_eq!(
            json["nodes"]["worker-long"][2],
            serde_json::json!({
                "id": "kubeadm.swap",
                "status": "set",
                "message": "set by the install: now swap is on (2048 MiB)",
            })
        );
        assert_eq!(json["cluster"][0]["id"], "kubernetes.version");
        let keys: Vec<&String> = json.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["cluster", "nodes"]);
    }

    #[test]
    fn failed_only_on_fail() {
        let mut report = small();
        assert!(report.failed());
        report.nodes.remove("worker-long");
        assert!(!report.failed());
        // `set` does not fail: the install sets it.
        report.cluster.push(R::new("x", Status::SetByInstall, "y"));
        assert!(!report.failed());
        report.cluster.push(R::warn("kubernetes.version", "x"));
        assert!(!report.failed());
        assert!(
            report
                .render_table()
                .starts_with("CHECK              node1\n")
        );
    }
}
