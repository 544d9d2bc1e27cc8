//! `spec.operatingSystems`: the Debian and Ubuntu releases become `spec.osPackages` entries;
//! the others are warned about.

use serde_saphyr::Spanned;

use super::node::Node;
use super::read::Reader;
use super::{KubeKeyError, Options};

/// One `spec.osPackages` entry for a Debian or Ubuntu release.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct OsPackagesPart {
    /// `ID-VERSION_ID`, e.g. `ubuntu-22.04`.
    pub(super) distro: String,
    pub(super) arch: String,
    pub(super) suite: &'static str,
    pub(super) keyring: String,
    /// The repository's URL, when given (`--os-repository`); the entry is written commented
    /// out, for the user to complete, when not.
    pub(super) url: Option<String>,
}

/// Debian and Ubuntu releases kk can carry packages for: `(id, VERSION_ID, suite)`.
const RELEASES: [(&str, &str, &str); 8] = [
    ("debian", "10", "buster"),
    ("debian", "11", "bullseye"),
    ("debian", "12", "bookworm"),
    ("debian", "13", "trixie"),
    ("ubuntu", "18.04", "bionic"),
    ("ubuntu", "20.04", "focal"),
    ("ubuntu", "22.04", "jammy"),
    ("ubuntu", "24.04", "noble"),
];

pub(super) fn operating_systems(
    reader: &mut Reader,
    node: Option<&Spanned<Node>>,
    platforms: &[String],
    options: &Options,
) -> Result<Vec<OsPackagesPart>, KubeKeyError> {
    let mut parts = Vec::new();
    for system in reader.list(node, "spec.operatingSystems")? {
        let path = "spec.operatingSystems[]";
        let fields = reader.fields(
            system,
            path,
            &["arch", "type", "id", "version", "osImage", "repository"],
        )?;
        let text = |name: &str| reader.text(fields.get(name), &format!("{path}.{name}"));
        let (arch, id, version) = (text("arch")?, text("id")?, text("version")?);
        let kind = text("type")?;
        let image = text("osImage")?.or(id).unwrap_or("?").to_owned();
        let iso = iso(reader, fields.get("repository"))?;
        let Some(((id, version), arch)) = id.zip(version).zip(arch) else {
            reader.warn(
                system,
                format!("operating system `{image}` has no `id`, `version` or `arch`; no packages bundled"),
            );
            continue;
        };
        let distro = format!("{id}-{version}");
        if kind.is_some_and(|kind| kind != "linux") {
            reader.warn(
                system,
                format!("operating system `{distro}` ({image}) is not bundled: kk bundles for Linux nodes only"),
            );
            continue;
        }
        let release = RELEASES
            .iter()
            .find(|(known_id, known_version, _)| *known_id == id && *known_version == version);
        match release {
            Some((_, _, suite)) if platforms.contains(&format!("linux/{arch}")) => {
                let url = options.os_repository(&distro, arch).map(str::to_owned);
                if url.is_none() {
                    reader.warn(
                        system,
                        format!("operating system `{distro}` ({image}, {arch}): kk carries its packages from a Debian-format repository, not KubeKey's ISO{iso}; give its URL with `--os-repository {distro}=URL`, or fill in the `url` of the `spec.osPackages` entry commented in the converted manifest"),
                    );
                } else if !iso.is_empty() {
                    reader.warn(
                        system,
                        format!("operating system `{distro}` ({arch}): its packages come from the repository given with `--os-repository`{iso}"),
                    );
                }
                parts.push(OsPackagesPart {
                    distro,
                    arch: arch.to_owned(),
                    suite,
                    keyring: format!("/usr/share/keyrings/{id}-archive-keyring.gpg"),
                    url,
                });
            }
            Some(_) => reader.warn(
                system,
                format!("operating system `{distro}` is for `{arch}`, which is not in `spec.arches`; no packages bundled"),
            ),
            None => reader.warn(
                system,
                format!("operating system `{distro}` ({image}) is not bundled: kk carries packages only for Debian and Ubuntu releases ({}){iso}", known_releases()),
            ),
        }
    }
    Ok(parts)
}

fn known_releases() -> String {
    RELEASES
        .iter()
        .map(|(id, version, _)| format!("{id}-{version}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` (ISO `…` not used)` for a repository that names an ISO, else nothing.
fn iso(reader: &mut Reader, node: Option<&Spanned<Node>>) -> Result<String, KubeKeyError> {
    let Some(node) = node else {
        return Ok(String::new());
    };
    let path = "spec.operatingSystems[].repository";
    let repository = reader.fields(node, path, &["iso"])?;
    let Some(iso) = repository.get("iso") else {
        return Ok(String::new());
    };
    let fields = reader.fields(
        iso,
        &format!("{path}.iso"),
        &["localPath", "url", "checksum"],
    )?;
    let named = reader
        .text(fields.get("url"), &format!("{path}.iso.url"))?
        .or(reader.text(fields.get("localPath"), &format!("{path}.iso.localPath"))?);
    Ok(named.map_or(String::new(), |iso| format!(" (ISO `{iso}` not used)")))
}
