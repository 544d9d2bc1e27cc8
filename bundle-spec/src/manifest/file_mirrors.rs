//! `spec.fileMirrors`: where the builder downloads binaries, checksum files and charts from
//! instead of their upstream host.
//!
//! A mirror replaces scheme, host and port of a URL by its base URL and keeps the path, so
//! `https://dl.k8s.io/release/v1.31.4/bin/linux/amd64/kubelet` with `dl.k8s.io:
//! http://127.0.0.1:8080/dl.k8s.io` is fetched from
//! `http://127.0.0.1:8080/dl.k8s.io/release/v1.31.4/bin/linux/amd64/kubelet`. Keys are matched
//! against a URL's `host[:port]` literally, hence lowercase and without a default port.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::SpannedMap;
use super::url::{check_http_url, is_host_port};

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &SpannedMap<Spanned<String>>,
) -> Result<BTreeMap<String, String>, ManifestError> {
    raw.0
        .iter()
        .map(|(host, base)| {
            if !is_host_port(&host.value) {
                return Err(ManifestError::InvalidFileMirrorHost {
                    at: SourceLocation::of(file, host),
                    host: host.value.clone(),
                });
            }
            check_base_url(&base.value).map_err(|problem| ManifestError::InvalidUrl {
                at: SourceLocation::of(file, base),
                url: base.value.clone(),
                problem,
            })?;
            Ok((host.value.clone(), base.value.clone()))
        })
        .collect()
}

/// A base URL is an `http(s)` URL that a path can be appended to.
fn check_base_url(url: &str) -> Result<(), &'static str> {
    check_http_url(url)?;
    if url.contains(['?', '#']) {
        return Err("a mirror base url cannot have a query or fragment");
    }
    Ok(())
}
