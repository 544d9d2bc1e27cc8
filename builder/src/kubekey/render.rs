//! Writes a [`Converted`] manifest as kk bundle-manifest YAML.
//!
//! Every string is written as a JSON string, which is a valid double-quoted YAML scalar:
//! whatever a KubeKey value holds (`:`, `#`, a leading `*`), it reads back as the same text.

use std::fmt::Write as _;

use super::Warning;
use super::map::Converted;

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
    if !converted.os_packages.is_empty() {
        // Commented out: kk needs the URL of a Debian-format repository, which KubeKey's
        // manifest does not have (it names an ISO), and a bundle must not guess one.
        out.push_str("  # osPackages: fill in each `url` with your repository for that release, then uncomment\n");
        out.push_str("  # osPackages:\n");
        for packages in &converted.os_packages {
            let _ = writeln!(out, "  #   - distro: {}", packages.distro);
            let _ = writeln!(out, "  #     arch: {}", packages.arch);
            out.push_str("  #     repository:\n");
            out.push_str("  #       url: \"http://…\"\n");
            let _ = writeln!(out, "  #       suite: {}", packages.suite);
            let _ = writeln!(out, "  #       keyring: {}", packages.keyring);
        }
    }
    out
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
