//! The upgrade state: from what, to which bundle, and which step finished on which node,
//! persisted in the work directory (`upgrade-state.json`) beside the install state, durable the
//! same way (temporary file, fsync, rename), so a killed upgrade is continued by the same
//! command and a second upgrade to another bundle is refused until the first is finished.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{UpgradeError, UpgradePlanError};
use super::plan::Installed;
use crate::install::state::{STATE_FILE, State, read_state_file, write_state_file};
use crate::install::target::Target;

/// The upgrade state file's name in the work directory.
pub const UPGRADE_STATE_FILE: &str = "upgrade-state.json";

/// The persisted upgrade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpgradeState {
    /// What was installed when the upgrade began.
    pub from: Installed,
    /// The identity (`sha256:…`) of the bundle upgraded to.
    pub to: String,
    /// Per target, the steps done and how long each took (seconds).
    pub done: BTreeMap<Target, BTreeMap<String, f64>>,
    /// Whether every step is done (the install state names `to` since).
    pub finished: bool,
}

impl UpgradeState {
    /// The upgrade to `to` as the work directory has it: the unfinished one to `to` resumed,
    /// or a new one from the install state. An unfinished upgrade to another bundle is refused.
    pub fn begin(work_dir: &Path, to: &str) -> Result<Self, UpgradeError> {
        let path = work_dir.join(UPGRADE_STATE_FILE);
        match Self::load(work_dir)? {
            Some(state) if state.to == to => return Ok(state),
            Some(state) if !state.finished => {
                return Err(UpgradePlanError::OtherUpgrade {
                    path,
                    recorded: state.to,
                    bundle: to.to_owned(),
                }
                .into());
            }
            _ => {}
        }
        let install = State::load(work_dir)?.ok_or_else(|| UpgradePlanError::NotInstalled {
            path: work_dir.join(STATE_FILE),
        })?;
        Ok(Self {
            from: Installed {
                bundle: install.bundle,
                versions: install.versions,
            },
            to: to.to_owned(),
            done: BTreeMap::new(),
            finished: false,
        })
    }

    /// Reads the upgrade state of `work_dir`; `None` when there is none.
    pub fn load(work_dir: &Path) -> Result<Option<Self>, UpgradeError> {
        let path = work_dir.join(UPGRADE_STATE_FILE);
        read_state_file(&path).map_err(state_error(&path))
    }

    /// Writes the state into `work_dir` atomically and durably.
    pub fn save(&self, work_dir: &Path) -> Result<(), UpgradeError> {
        let path = work_dir.join(UPGRADE_STATE_FILE);
        write_state_file(&path, self, ".upgrade-state.").map_err(state_error(&path))
    }

    /// Whether `step` is done on `target`.
    pub fn is_done(&self, target: &Target, step: &str) -> bool {
        self.done
            .get(target)
            .is_some_and(|steps| steps.contains_key(step))
    }

    /// Records `step` done on `target` after `seconds`.
    pub fn mark_done(&mut self, target: &Target, step: &str, seconds: f64) {
        self.done
            .entry(target.clone())
            .or_default()
            .insert(step.to_owned(), seconds);
    }
}

fn state_error(path: &Path) -> impl FnOnce(std::io::Error) -> UpgradeError + use<> {
    let path: PathBuf = path.to_owned();
    move |source| UpgradeError::State { path, source }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn installed(dir: &Path, bundle: &str) {
        let mut state = State::new(bundle);
        state
            .versions
            .insert("kubeadm".to_owned(), "v1.32.3".to_owned());
        state.save(dir).expect("save");
    }

    #[test]
    fn an_upgrade_begins_from_the_install_state_and_resumes_its_done_steps() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = UpgradeState::begin(dir.path(), "sha256:bb").expect_err("nothing installed");
        assert!(error.to_string().contains(STATE_FILE), "{error}");
        installed(dir.path(), "sha256:aa");
        let mut state = UpgradeState::begin(dir.path(), "sha256:bb").expect("begin");
        assert_eq!(state.from.bundle, "sha256:aa");
        assert_eq!(state.from.kubernetes(), Some("v1.32.3"));
        let cp1 = Target::node("cp1");
        state.mark_done(&cp1, "upgrade.apply", 2.0);
        state.save(dir.path()).expect("save");
        // The install state moves on only at the end; the upgrade still starts from `aa`.
        installed(dir.path(), "sha256:bb");
        let resumed = UpgradeState::begin(dir.path(), "sha256:bb").expect("resume");
        assert_eq!(resumed.from.bundle, "sha256:aa");
        assert!(resumed.is_done(&cp1, "upgrade.apply"));
        assert!(!resumed.is_done(&Target::node("w1"), "upgrade.apply"));
    }

    #[test]
    fn another_bundle_is_refused_while_an_upgrade_is_half_done_and_taken_after_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        installed(dir.path(), "sha256:aa");
        let mut state = UpgradeState::begin(dir.path(), "sha256:bb").expect("begin");
        state.save(dir.path()).expect("save");
        let error = UpgradeState::begin(dir.path(), "sha256:cc").expect_err("half done");
        let message = error.to_string();
        assert!(
            message.contains("sha256:bb") && message.contains("sha256:cc"),
            "{message}"
        );
        assert!(message.contains("hint: finish it first"), "{message}");
        state.finished = true;
        state.save(dir.path()).expect("save");
        installed(dir.path(), "sha256:bb");
        let next = UpgradeState::begin(dir.path(), "sha256:cc").expect("after the first");
        assert_eq!(next.from.bundle, "sha256:bb");
        assert!(next.done.is_empty() && !next.finished);
    }

    #[test]
    fn the_state_reads_back_as_written_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        installed(dir.path(), "sha256:aa");
        let mut state = UpgradeState::begin(dir.path(), "sha256:bb").expect("begin");
        state.mark_done(&Target::Cluster, "upgrade.precheck", 0.5);
        state.save(dir.path()).expect("save");
        state.save(dir.path()).expect("save again");
        assert_eq!(
            UpgradeState::load(dir.path()).expect("load"),
            Some(state.clone())
        );
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, [STATE_FILE, UPGRADE_STATE_FILE]);
    }
}
