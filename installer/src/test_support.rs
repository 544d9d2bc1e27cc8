//! Helpers the library's unit tests share.

use bundle_spec::description::{
    Artifact, BuilderInfo, Description, FORMAT_VERSION, SourceManifest,
};
use bundle_spec::lock::Lock;

/// A bundle description of `artifacts`, made at `created` by a test builder.
pub(crate) fn description(created: jiff::Timestamp, artifacts: Vec<Artifact>) -> Description {
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
