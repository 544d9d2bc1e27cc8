//! Helpers for tests of this crate and of the crates that read and write bundles (feature
//! `test-support`, enabled only as a dev-dependency): one owner for the minimal bundle
//! description tests build bundles around.

use crate::description::{Artifact, BuilderInfo, Description, FORMAT_VERSION, SourceManifest};
use crate::lock::Lock;

/// A bundle description of `artifacts`, made at `created` by a builder named `test`.
pub fn description(created: jiff::Timestamp, artifacts: Vec<Artifact>) -> Description {
    Description {
        format_version: FORMAT_VERSION,
        builder: BuilderInfo {
            name: "test".into(),
            version: "0".into(),
        },
        created,
        manifest: SourceManifest {
            name: "m.yaml".into(),
            text: String::new(),
        },
        lock: Lock::new(created),
        artifacts,
    }
}
