//! What a bundle holds, read from its header through the seek table — without decompressing
//! the blobs (their headers are read, so a bundle whose members lie about their sizes is
//! refused, not described). `kk-bundle inspect` and `kk-install inspect` print this (with `--sbom`, the SBOM).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use crate::bundle_error::BundleError;
use crate::packages::PackageSet;
use crate::read::Bundle;

/// The bundle's header as JSON: identity, versions, sizes, artifacts, and the lock.
pub fn inspect_json(path: &Path) -> Result<serde_json::Value, BundleError> {
    let bundle = Bundle::open_listed(path)?;
    let d = bundle.description();
    Ok(json!({
        "path": path.display().to_string(),
        "identity": bundle.identity().to_string(),
        "formatVersion": d.format_version.to_string(),
        "builder": d.builder,
        "created": d.created.to_string(),
        "size": bundle.size(),
        "contentSize": bundle.content_size(),
        "frames": bundle.frame_count(),
        "members": bundle.checksums().len() + 1,
        "manifest": d.manifest.name,
        "artifacts": d.artifacts,
        "lock": d.lock,
        "base": d.base,
        "packages": d.packages,
    }))
}

/// The bundle's SBOM (SPDX 2.3 JSON) as stored, read through the seek table and verified
/// against the checksum list; an error naming the format version for a bundle without one.
pub fn inspect_sbom(path: &Path) -> Result<Vec<u8>, BundleError> {
    let mut bundle = Bundle::open_listed(path)?;
    bundle.sbom()?.ok_or(BundleError::NoSbom {
        version: bundle.description().format_version,
    })
}

/// The bundle's header as a table for people.
pub fn inspect_text(path: &Path) -> Result<String, BundleError> {
    let bundle = Bundle::open_listed(path)?;
    let d = bundle.description();
    let mut out = String::new();
    let size = |bytes: u64| bytesize::ByteSize(bytes).to_string();
    let _ = writeln!(out, "bundle    {}", path.display());
    let _ = writeln!(out, "identity  {}", bundle.identity());
    let _ = writeln!(
        out,
        "format    {}   built by {} {} at {}",
        d.format_version, d.builder.name, d.builder.version, d.created
    );
    let _ = writeln!(
        out,
        "size      {} compressed, {} of content, {} members in {} frames",
        size(bundle.size()),
        size(bundle.content_size()),
        bundle.checksums().len() + 1,
        bundle.frame_count()
    );
    if let Some(base) = &d.base {
        let _ = writeln!(
            out,
            "delta     builds on bundle {}: takes {} blobs ({}) from it; unpack that one first",
            base.identity,
            base.blobs.len(),
            size(base.blobs.iter().map(|b| b.size).sum())
        );
    }
    if bundle.is_newer_minor() {
        let _ = writeln!(
            out,
            "note      format {} is newer than this kk-bundle knows; some details may not be shown",
            d.format_version
        );
    }
    let _ = writeln!(
        out,
        "\n{:<7} {:<52} {:<14} {:>10}  DIGEST",
        "KIND", "REFERENCE", "PLATFORM", "SIZE"
    );
    for artifact in &d.artifacts {
        let digest = artifact.digest.to_string();
        let _ = writeln!(
            out,
            "{:<7} {:<52} {:<14} {:>10}  {}",
            artifact.kind.to_string(),
            artifact.reference,
            artifact.platform.as_deref().unwrap_or("-"),
            size(artifact.size),
            &digest[..19.min(digest.len())]
        );
        if !artifact.omitted_platforms.is_empty() {
            let _ = writeln!(
                out,
                "{:<7} {:<52} (left out: {})",
                "",
                "",
                artifact.omitted_platforms.join(", ")
            );
        }
    }
    push_packages(&mut out, &d.packages);
    Ok(out)
}

/// Per distribution and architecture: the repository, the roots with why each is there, and
/// the closure's packages in install order with their count and total size.
fn push_packages(out: &mut String, sets: &[PackageSet]) {
    for set in sets {
        let total: u64 = set.packages.iter().map(|p| p.size).sum();
        let _ = writeln!(
            out,
            "\npackages  {} {} from {}: {} package{}, {}",
            set.distro,
            set.arch,
            set.repository,
            set.packages.len(),
            if set.packages.len() == 1 { "" } else { "s" },
            bytesize::ByteSize(total)
        );
        let roots: Vec<String> = set
            .roots
            .iter()
            .map(|root| format!("{} ({})", root.name, root.reason))
            .collect();
        let _ = writeln!(out, "  roots   {}", roots.join(", "));
        for package in &set.packages {
            let _ = writeln!(out, "  {} {}", package.name, package.version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Sha256Digest;
    use crate::packages::{Distro, PackageFormat, PackageRecord, PackageScope, RootPackage};

    fn record(name: &str, version: &str, size: u64) -> PackageRecord {
        PackageRecord {
            name: name.into(),
            version: version.into(),
            architecture: "amd64".into(),
            depends: String::new(),
            pre_depends: String::new(),
            provides: String::new(),
            multi_arch: String::new(),
            filename: format!("{name}_{version}_amd64.deb"),
            sha256: Sha256Digest::of(name.as_bytes()),
            size,
            reference: String::new(),
        }
    }

    #[test]
    fn packages_are_shown_per_distribution_and_architecture() {
        let set = PackageSet {
            distro: Distro::parse("debian-12").unwrap(),
            arch: "amd64".into(),
            format: PackageFormat::Deb,
            repository: "http://example.org/debian bookworm".into(),
            roots: vec![
                RootPackage {
                    name: "socat".into(),
                    scope: PackageScope::Kubernetes,
                    commands: vec!["socat".into()],
                    reason: "kubeadm".into(),
                },
                RootPackage {
                    name: "vim".into(),
                    scope: PackageScope::All,
                    commands: Vec::new(),
                    reason: "manifest".into(),
                },
            ],
            packages: vec![
                record("libwrap0", "7.6.q-32", 1000),
                record("socat", "1.7.4.4-2", 2000),
            ],
        };
        let mut out = String::new();
        push_packages(&mut out, &[set]);
        assert_eq!(
            out,
            "\npackages  debian-12 amd64 from http://example.org/debian bookworm: 2 packages, 2.9 KiB\n  \
             roots   socat (kubeadm), vim (manifest)\n  libwrap0 7.6.q-32\n  socat 1.7.4.4-2\n"
        );
    }
}
