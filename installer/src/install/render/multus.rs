//! Multus's manifest as kk applies it: upstream's thin-plugin manifest, carried by the bundle
//! as it was downloaded at the release tag (the `multus` binary), with the two things the plan
//! decides written in: the bundle's multus image in place of the one upstream names (at a tag
//! it still names `:snapshot`), and `--multus-master-cni-file-name` set to the primary CNI's
//! configuration file, so multus delegates to it rather than to whichever file sorts first in
//! `/etc/cni/net.d`.
//!
//! The manifest is edited as YAML, not as text, so that a manifest of another shape is refused
//! by name instead of applied half-edited.

use serde_json::Value;

/// The file name a node keeps multus's manifest under (upstream's).
pub const MULTUS_MANIFEST_FILE: &str = "multus-daemonset.yml";

/// The daemon's container in upstream's `DaemonSet`, the one that takes the delegate's flag.
pub const MULTUS_CONTAINER: &str = "kube-multus";

/// The thin entrypoint's flag naming the primary CNI's file in its autoconfig directory.
const DELEGATE_FLAG: &str = "--multus-master-cni-file-name";

/// Why the bundle's multus manifest cannot be edited into the one kk applies.
#[derive(Debug, thiserror::Error)]
pub enum MultusManifestError {
    /// The file is not YAML.
    #[error(
        "multus's manifest `{file}` is not YAML; hint: the bundle must carry upstream's `deployments/multus-daemonset.yml`"
    )]
    Yaml {
        /// The file on the node.
        file: String,
        /// Why.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// No document is a `DaemonSet`.
    #[error(
        "multus's manifest `{file}` has no DaemonSet; hint: the bundle must carry upstream's thin-plugin `deployments/multus-daemonset.yml`"
    )]
    NoDaemonSet {
        /// The file on the node.
        file: String,
    },
    /// The `DaemonSet` has no container `kube-multus` with `image` and `args` to edit.
    #[error(
        "multus's manifest `{file}` has no container `{container}` with an `image` and a list of `args` in its DaemonSet; hint: the bundle must carry upstream's thin-plugin `deployments/multus-daemonset.yml`"
    )]
    NoContainer {
        /// The file on the node.
        file: String,
        /// The container looked for.
        container: &'static str,
    },
}

/// `upstream` (the bundle's manifest, read from `file`) with every container of its `DaemonSet`
/// that runs multus's image running `image` instead, and the `kube-multus` container's
/// `--multus-master-cni-file-name` set to `delegate` (added, or replacing upstream's).
///
/// Keys come out sorted: the manifest is read back through a generic YAML tree, and the order
/// of a mapping's keys means nothing to kubectl.
pub fn multus_manifest(
    file: &str,
    upstream: &str,
    image: &str,
    delegate: &str,
) -> Result<String, MultusManifestError> {
    let mut documents: Vec<Value> =
        serde_saphyr::from_multiple(upstream).map_err(|source| MultusManifestError::Yaml {
            file: file.to_owned(),
            source: Box::new(source),
        })?;
    documents.retain(|document| !document.is_null());
    let daemon_set = documents
        .iter_mut()
        .find(|document| document["kind"] == "DaemonSet")
        .ok_or_else(|| MultusManifestError::NoDaemonSet {
            file: file.to_owned(),
        })?;
    let pod = &mut daemon_set["spec"]["template"]["spec"];
    let no_container = || MultusManifestError::NoContainer {
        file: file.to_owned(),
        container: MULTUS_CONTAINER,
    };
    let daemon = pod["containers"]
        .as_array_mut()
        .and_then(|containers| {
            containers
                .iter_mut()
                .find(|container| container["name"] == MULTUS_CONTAINER)
        })
        .ok_or_else(no_container)?;
    let upstream_image = daemon["image"]
        .as_str()
        .ok_or_else(no_container)?
        .to_owned();
    let args = daemon["args"].as_array_mut().ok_or_else(no_container)?;
    args.retain(|arg| {
        !arg.as_str()
            .is_some_and(|arg| arg.starts_with(&format!("{DELEGATE_FLAG}=")))
    });
    args.push(Value::String(format!("{DELEGATE_FLAG}={delegate}")));
    // The init container that installs the plugin's binary runs the same image.
    for list in ["containers", "initContainers"] {
        for container in pod[list].as_array_mut().into_iter().flatten() {
            if container["image"] == upstream_image.as_str() {
                container["image"] = Value::String(image.to_owned());
            }
        }
    }
    Ok(format!(
        "# Written by kk-install: multus's manifest from the bundle ({file}), its image and delegate set.\n{}",
        yaml(&documents)
    ))
}

/// `documents` as YAML, `---` between them.
fn yaml(documents: &[Value]) -> String {
    // Plain strings, numbers, booleans and mappings with string keys always serialize.
    serde_saphyr::to_string_multiple(documents).expect("a JSON tree serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest of upstream's shape, written for this test: a CRD, a service account and
    /// the thin `DaemonSet` whose daemon and init container run the same `:snapshot` image.
    const UPSTREAM: &str = "\
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: network-attachment-definitions.k8s.cni.cncf.io}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: multus, namespace: kube-system}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-multus-ds, namespace: kube-system}
spec:
  template:
    spec:
      containers:
      - name: kube-multus
        image: ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot
        command: [/thin_entrypoint]
        args:
        - \"--multus-conf-file=auto\"
        - \"--cni-conf-dir=/host/etc/cni/net.d\"
        resources: {requests: {cpu: 100m}}
        securityContext: {privileged: true}
      initContainers:
      - name: install-multus-binary
        image: ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot
        args: [--type, thin]
";

    const IMAGE: &str = "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0";

    fn documents(rendered: &str) -> Vec<Value> {
        serde_saphyr::from_multiple(rendered).expect("the rendered manifest is YAML")
    }

    #[test]
    fn the_bundles_image_replaces_upstreams_and_the_primary_is_the_delegate() {
        let rendered =
            multus_manifest("m.yml", UPSTREAM, IMAGE, "10-calico.conflist").expect("renders");
        let documents = documents(&rendered);
        assert_eq!(documents.len(), 3, "{rendered}");
        let pod = &documents[2]["spec"]["template"]["spec"];
        assert_eq!(pod["containers"][0]["image"], IMAGE);
        assert_eq!(pod["initContainers"][0]["image"], IMAGE);
        assert_eq!(
            pod["containers"][0]["args"],
            serde_json::json!([
                "--multus-conf-file=auto",
                "--cni-conf-dir=/host/etc/cni/net.d",
                "--multus-master-cni-file-name=10-calico.conflist"
            ])
        );
        assert_eq!(pod["containers"][0]["securityContext"]["privileged"], true);
        assert_eq!(pod["initContainers"][0]["args"][0], "--type");
        assert!(!rendered.contains(":snapshot"), "{rendered}");
        let images = bundle_spec::charts::missing_images(&rendered, &[IMAGE.to_owned()]);
        assert!(images.expect("yaml").is_empty());
    }

    #[test]
    fn a_delegate_upstream_set_is_replaced_not_doubled() {
        let upstream = UPSTREAM.replace(
            "- \"--multus-conf-file=auto\"",
            "- \"--multus-conf-file=auto\"\n        - \"--multus-master-cni-file-name=10-flannel.conflist\"",
        );
        let rendered =
            multus_manifest("m.yml", &upstream, IMAGE, "05-cilium.conflist").expect("renders");
        let args = &documents(&rendered)[2]["spec"]["template"]["spec"]["containers"][0]["args"];
        let delegates: Vec<&Value> = args
            .as_array()
            .expect("args")
            .iter()
            .filter(|arg| arg.as_str().is_some_and(|a| a.starts_with(DELEGATE_FLAG)))
            .collect();
        assert_eq!(
            delegates,
            ["--multus-master-cni-file-name=05-cilium.conflist"]
        );
    }

    #[test]
    fn a_manifest_of_another_shape_is_refused_by_name() {
        let cases = [
            ("a: [".to_owned(), "is not YAML"),
            (
                "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: multus}\n".to_owned(),
                "has no DaemonSet",
            ),
            (
                UPSTREAM.replace("name: kube-multus\n", "name: other\n"),
                "has no container `kube-multus`",
            ),
            (
                UPSTREAM.replace("        args:\n        - \"--multus-conf-file=auto\"\n        - \"--cni-conf-dir=/host/etc/cni/net.d\"\n", ""),
                "has no container `kube-multus` with an `image` and a list of `args`",
            ),
        ];
        for (upstream, expected) in cases {
            let error = multus_manifest(
                "/var/lib/kk/charts/multus-daemonset.yml",
                &upstream,
                IMAGE,
                "x",
            )
            .expect_err(expected);
            let message = error.to_string();
            assert!(
                message.contains("`/var/lib/kk/charts/multus-daemonset.yml`")
                    && message.contains(expected)
                    && message.contains("hint:"),
                "{message}"
            );
        }
    }
}
