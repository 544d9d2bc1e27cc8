//! Where a step runs: the cluster as a whole, or one node. A leaf module: the state, the
//! executor and the install's errors all name a target.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The key of [`Target::Cluster`] in the state file: no inventory host can be named `*` (host
/// names are DNS names), so it cannot be mistaken for a node.
const CLUSTER_KEY: &str = "*";

/// Where a step runs: once for the whole cluster (on the installer machine: hooks, precheck,
/// certificates, token) or on one node.
///
/// A type rather than a reserved name: every string is a possible inventory host name (a host
/// may well be called `installer`), so a node's steps must never be told from the cluster's by
/// its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// The cluster as a whole.
    Cluster,
    /// The node of this inventory name.
    Node(String),
}

impl Target {
    /// The node `name`.
    pub fn node(name: &str) -> Self {
        Self::Node(name.to_owned())
    }

    /// How the state file and the progress name it: the node's name, or `*` for the cluster.
    pub fn key(&self) -> &str {
        match self {
            Self::Cluster => CLUSTER_KEY,
            Self::Node(name) => name,
        }
    }
}

impl Target {
    /// Where a step failed, for messages: on node `name`, or on the installer machine.
    pub fn place(&self) -> String {
        match self {
            Self::Cluster => "on the installer machine".to_owned(),
            Self::Node(name) => format!("on node `{name}`"),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so the progress lines' column widths apply.
        f.pad(self.key())
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        Ok(if key == CLUSTER_KEY {
            Self::Cluster
        } else {
            Self::Node(key)
        })
    }
}
