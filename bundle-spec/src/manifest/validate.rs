//! From [`raw`](super::raw) to the public types: every check that is not YAML shape.

use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::raw::{RawManifest, RawSpec};
use super::rules::{Seen, dns_name, required};
use super::{
    Metadata, SourceLocation, Spec, binary, chart, file_mirrors, image, kubernetes, os_packages,
    registry,
};
use crate::platform::Platform;

pub(super) fn manifest(
    file: &Arc<str>,
    raw: &Spanned<RawManifest>,
) -> Result<(Metadata, Spec), ManifestError> {
    let root = SourceLocation::of(file, raw);
    let metadata = required(raw.value.metadata.as_ref(), "metadata", &root)?;
    let name = required(
        metadata.value.name.as_ref(),
        "name",
        &SourceLocation::of(file, metadata),
    )?;
    let metadata = Metadata {
        name: dns_name(file, name, "manifest name")?,
    };
    let spec = spec(file, required(raw.value.spec.as_ref(), "spec", &root)?)?;
    Ok((metadata, spec))
}

fn spec(file: &Arc<str>, raw: &Spanned<RawSpec>) -> Result<Spec, ManifestError> {
    let at = SourceLocation::of(file, raw);
    let raw = &raw.value;
    let platforms = platforms(file, raw.platforms.as_ref())?;
    let spec = Spec {
        kubernetes: raw
            .kubernetes
            .as_ref()
            .map(|kubernetes| kubernetes::validate(file, kubernetes))
            .transpose()?,
        images: image::validate_all(file, &raw.images)?,
        binaries: binary::validate_all(file, &raw.binaries, &platforms)?,
        charts: chart::validate_all(file, &raw.charts)?,
        registries: registry::validate_all(file, &raw.registries)?,
        file_mirrors: file_mirrors::validate_all(file, &raw.file_mirrors)?,
        os_packages: os_packages::validate_all(file, &raw.os_packages, &platforms)?,
        verify: raw
            .verify
            .as_ref()
            .map(|verify| image::validate_verify(file, verify))
            .transpose()?,
        platforms,
    };
    let empty = spec.kubernetes.is_none()
        && spec.images.is_empty()
        && spec.binaries.is_empty()
        && spec.charts.is_empty()
        && spec.os_packages.is_empty();
    if empty {
        return Err(ManifestError::NothingToBundle { at });
    }
    Ok(spec)
}

fn platforms(
    file: &Arc<str>,
    raw: Option<&Spanned<Vec<Spanned<String>>>>,
) -> Result<Vec<Platform>, ManifestError> {
    let Some(raw) = raw else {
        return Ok(vec![Platform::linux_amd64()]);
    };
    if raw.value.is_empty() {
        return Err(ManifestError::EmptyPlatforms {
            at: SourceLocation::of(file, raw),
        });
    }
    let mut seen = Seen::default();
    raw.value
        .iter()
        .map(|entry| {
            let at = SourceLocation::of(file, entry);
            let platform: Platform =
                entry
                    .value
                    .parse()
                    .map_err(|source| ManifestError::InvalidPlatform {
                        at: at.clone(),
                        value: entry.value.clone(),
                        source,
                    })?;
            seen.insert(platform.clone(), &at).map_err(|first| {
                ManifestError::DuplicatePlatform {
                    at,
                    value: entry.value.clone(),
                    platform: platform.to_string(),
                    first,
                }
            })?;
            Ok(platform)
        })
        .collect()
}
