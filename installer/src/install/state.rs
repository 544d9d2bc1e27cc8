//! The install state: which step finished on which node, persisted in the work directory so a
//! rerun continues where the last run stopped.
//!
//! The file (`<work dir>/install-state.json`) names the bundle it belongs to; a run with another
//! bundle is refused rather than mixing two installs. Every change is written to a temporary file,
//! fsynced and renamed over the old one (then the directory is fsynced), so a killed installer
//! leaves either the previous state or the new one, never a torn file. A step is recorded only
//! after it succeeded on that node, so the worst a kill can cost is redoing one step — and every
//! step checks before it changes, so redoing it changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::InstallError;
pub use super::target::Target;

/// The state file's name in the work directory.
pub const STATE_FILE: &str = "install-state.json";

/// The persisted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The identity (`sha256:…`) of the bundle being installed.
    pub bundle: String,
    /// Per target, the steps done and how long each took (seconds).
    pub done: BTreeMap<Target, BTreeMap<String, f64>>,
    /// Per node, the files kk wrote there (for `/etc/kubekey/installed.json` and reset).
    #[serde(default)]
    pub files: BTreeMap<String, BTreeSet<String>>,
    /// The versions the bundle installs: every binary's by name (`kubeadm` is the Kubernetes
    /// version), so an upgrade knows what it upgrades from without asking a node. Empty in
    /// the states of older releases.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
}

impl State {
    /// A fresh state for `bundle`.
    pub fn new(bundle: &str) -> Self {
        Self {
            bundle: bundle.to_owned(),
            done: BTreeMap::new(),
            files: BTreeMap::new(),
            versions: BTreeMap::new(),
        }
    }

    /// Reads the state of `work_dir`; `None` when there is none yet.
    pub fn load(work_dir: &Path) -> Result<Option<Self>, InstallError> {
        let path = work_dir.join(STATE_FILE);
        read_state_file(&path).map_err(state_error(&path))
    }

    /// Writes the state into `work_dir` atomically and durably.
    pub fn save(&self, work_dir: &Path) -> Result<(), InstallError> {
        let path = work_dir.join(STATE_FILE);
        fs::create_dir_all(work_dir).map_err(state_error(work_dir))?;
        write_state_file(&path, self, ".install-state.").map_err(state_error(&path))
    }

    /// Whether `step` is done on `target`.
    pub fn is_done(&self, target: &Target, step: &str) -> bool {
        self.done
            .get(target)
            .is_some_and(|steps| steps.contains_key(step))
    }

    /// Whether any step is done on the node `name`.
    pub fn has_node(&self, name: &str) -> bool {
        self.done
            .keys()
            .any(|target| matches!(target, Target::Node(node) if node == name))
    }

    /// Records `step` done on `target` after `seconds`.
    pub fn mark_done(&mut self, target: &Target, step: &str, seconds: f64) {
        self.done
            .entry(target.clone())
            .or_default()
            .insert(step.to_owned(), seconds);
    }

    /// Forgets `step` everywhere, so it runs again (`--phase`).
    pub fn forget(&mut self, step: &str) {
        for steps in self.done.values_mut() {
            steps.remove(step);
        }
    }

    /// Forgets the node `name`: its steps and its files (`delete-node`); returns whether the
    /// state had any.
    pub fn forget_node(&mut self, name: &str) -> bool {
        let done = self.done.remove(&Target::node(name)).is_some();
        let files = self.files.remove(name).is_some();
        done || files
    }

    /// Records files kk wrote on `node`.
    pub fn add_files(&mut self, node: &str, files: impl IntoIterator<Item = String>) {
        self.files.entry(node.to_owned()).or_default().extend(files);
    }
}

/// Reads a JSON state file of the work directory (the install's, the upgrade's); `None` when
/// there is none yet.
pub(crate) fn read_state_file<T: DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(io::Error::from),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes a JSON state file atomically and durably (temporary file named `temp_prefix…`,
/// fsync, rename), readable by root only: a killed run leaves the old state or the new one.
pub(crate) fn write_state_file<T: Serialize>(
    path: &Path,
    value: &T,
    temp_prefix: &str,
) -> io::Result<()> {
    let json = serde_json::to_vec_pretty(value)?;
    crate::durable::write(path, &json, 0o600, temp_prefix)
}

fn state_error(path: &Path) -> impl FnOnce(io::Error) -> InstallError + use<> {
    let path: PathBuf = path.to_owned();
    move |source| InstallError::State { path, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_recorded_saved_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(State::load(dir.path()).expect("load"), None);
        let node1 = Target::node("node1");
        let mut state = State::new("sha256:ab");
        assert!(!state.is_done(&node1, "os.swap"));
        state.mark_done(&node1, "os.swap", 0.5);
        state.mark_done(&Target::Cluster, "pki.issue", 0.1);
        state.add_files("node1", ["/etc/sysctl.d/99-kk.conf".to_owned()]);
        state.save(dir.path()).expect("save");
        let read = State::load(dir.path()).expect("load").expect("state");
        assert_eq!(read, state);
        assert!(read.is_done(&node1, "os.swap"));
        assert!(!read.is_done(&Target::node("node2"), "os.swap"));
        let mut again = read.clone();
        again.forget("os.swap");
        assert!(!again.is_done(&node1, "os.swap"));
        assert!(again.is_done(&Target::Cluster, "pki.issue"));
        assert!(again.forget_node("node1"));
        assert!(!again.has_node("node1") && !again.files.contains_key("node1"));
        assert!(!again.forget_node("node1"), "forgotten once");
        assert!(again.is_done(&Target::Cluster, "pki.issue"));
    }

    #[test]
    fn a_node_named_installer_is_a_node_and_the_cluster_is_kept_as_before() {
        let dir = tempfile::tempdir().expect("tempdir");
        let installer = Target::node("installer");
        let mut state = State::new("sha256:ab");
        state.mark_done(&installer, "os.swap", 0.5);
        state.mark_done(&Target::Cluster, "pki.issue", 0.1);
        state.save(dir.path()).expect("save");
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.path().join(STATE_FILE)).expect("read"))
                .expect("json");
        // The file keeps the format of earlier releases: `*` for the cluster.
        assert_eq!(json["done"]["installer"]["os.swap"], 0.5);
        assert_eq!(json["done"]["*"]["pki.issue"], 0.1);
        let read = State::load(dir.path()).expect("load").expect("state");
        assert!(read.is_done(&installer, "os.swap") && read.has_node("installer"));
        assert!(!read.is_done(&Target::Cluster, "os.swap"));
        assert!(!read.has_node("*"), "the cluster is no node");
    }

    #[test]
    fn a_torn_state_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(STATE_FILE), b"{\"bundle\": ").expect("write");
        let error = State::load(dir.path()).expect_err("torn");
        assert!(error.to_string().contains(STATE_FILE), "{error}");
    }

    #[test]
    fn saving_leaves_no_temporary_file_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = State::new("sha256:cd");
        state.save(dir.path()).expect("save");
        state.save(dir.path()).expect("save again");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(STATE_FILE)]);
    }
}
