//! Writes a [`Converted`] manifest as kk bundle-manifest YAML.
//!
//! Every string is written as a JSON string, which is a valid double-quoted YAML scalar:
//! whatever a KubeKey value holds (`:`, `#`, a leading `*`), it reads back as the same text.

use std::fmt::Write as _;

use super::Warning;
use super::map::Converted;
use super::systems::OsPackagesPart;

/// The manifest's text: a comment header naming the source and the warnings, then the body.
pub(super) fn document(source: &str, body: &str, warnings: &[Warning]) -> String {
    let mut out = format!(
        "# Converted by `kk-bundle convert` from the KubeKey v3 Manifest `{source}`\n# (apiVersion: kubekey.kubesphere.io/v1alpha2, kind: Manifest).\n"
    );
    if warnings.is_empty() {
        out.push_str("# Everything it asks for is carried.\n");
    } else {
        out.push_str("# What kk does not carry as KubeKey did, by line of that file:\n");
        for warning in warnings {
            let _ = writeln!(out, "#   {}: {}", warning.at.line(), warning.message);
        }
    }
    out.push_str(body);
    out
}

/// The manifest's body, from `apiVersion` on.
pub(super) fn body(converted: &Converted) -> String {
    let mut out = format!(
        "apiVersion: {}\nkind: {}\nmetadata:\n  name: {}\nspec:\n",
        bundle_spec::manifest::API_VERSION,
        bundle_spec::manifest::KIND,
        quote(&converted.name),
    );
    if !converted.platforms.is_empty() {
        let _ = writeln!(out, "  platforms: [{}]", list(&converted.platforms));
    }
    if let Some(kubernetes) = &converted.kubernetes {
        out.push_str("  kubernetes:\n");
        let _ = writeln!(out, "    version: {}", quote(&kubernetes.version));
        let _ = writeln!(
            out,
            "    containerRuntime: {}",
            kubernetes.container_runtime
        );
        let _ = writeln!(out, "    cni: {}", kubernetes.cni);
        if !kubernetes.components.is_empty() {
            out.push_str("    components:\n");
            for (name, version) in &kubernetes.components {
                let _ = writeln!(out, "      {name}: {}", quote(version));
            }
        }
    }
    if !converted.images.is_empty() {
        out.push_str("  images:\n");
        for image in &converted.images {
            let _ = writeln!(out, "    - {}", quote(image));
        }
    }
    if !converted.registries.is_empty() {
        out.push_str("  registries:\n");
        for registry in &converted.registries {
            let _ = writeln!(out, "    {}:", quote(&registry.host));
            let _ = writeln!(out, "      plainHTTP: {}", registry.plain_http);
            let _ = writeln!(
                out,
                "      insecureSkipVerify: {}",
                registry.insecure_skip_verify
            );
            if let Some((username, variable)) = &registry.credentials {
                let _ = writeln!(out, "      username: {}", quote(username));
                let _ = writeln!(out, "      passwordEnv: {variable}");
            }
        }
    }
    os_packages(&mut out, &converted.os_packages);
    out
}

/// `spec.osPackages`: the entries with a repository URL, then those without, commented out for
/// the user to complete (kk needs a Debian-format repository, KubeKey names an ISO, and a
/// bundle must not guess a mirror).
fn os_packages(out: &mut String, parts: &[OsPackagesPart]) {
    let (given, missing): (Vec<&OsPackagesPart>, Vec<&OsPackagesPart>) =
        parts.iter().partition(|part| part.url.is_some());
    if !given.is_empty() {
        out.push_str("  osPackages:\n");
        for part in given {
            os_packages_entry(out, part, "  ", part.url.as_deref().unwrap_or_default());
        }
    }
    if !missing.is_empty() {
        out.push_str(
            "  # osPackages: fill in each `url` with your repository for that release, then uncomment\n",
        );
        if parts.iter().all(|part| part.url.is_none()) {
            out.push_str("  # osPackages:\n");
        }
        for part in missing {
            os_packages_entry(out, part, "  # ", "http://…");
        }
    }
}

fn os_packages_entry(out: &mut String, part: &OsPackagesPart, prefix: &str, url: &str) {
    let _ = writeln!(out, "{prefix}  - distro: {}", part.distro);
    let _ = writeln!(out, "{prefix}    arch: {}", part.arch);
    let _ = writeln!(out, "{prefix}    repository:");
    let _ = writeln!(out, "{prefix}      url: {}", quote(url));
    let _ = writeln!(out, "{prefix}      suite: {}", part.suite);
    let _ = writeln!(out, "{prefix}      keyring: {}", part.keyring);
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|item| quote(item))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` as a double-quoted YAML scalar.
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}
