//! Tests of the version catalog: its data parses, carries the facts FACTS.md records, and every
//! expansion is something a manifest could have said by hand.

use std::collections::BTreeSet;

use bundle_spec::manifest::{Manifest, PLACEHOLDERS};
use oci_spec::distribution::Reference;

use super::*;

const RUNTIMES: [&str; 2] = ["containerd", "docker"];
const CNIS: [&str; 6] = [
    "calico",
    "cilium",
    "flannel",
    "none",
    "hybridnet",
    "kube-ovn",
];

/// A `spec.kubernetes` as the manifest parser makes it (its types cannot be built directly).
fn kubernetes(version: &str, runtime: &str, cni: &str) -> Kubernetes {
    let text = format!(
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata:\n  name: test\n\
         spec:\n  kubernetes:\n    version: {version}\n    containerRuntime: {runtime}\n    cni: {cni}\n"
    );
    let manifest = Manifest::from_str_named(&text, "test.yaml").expect("valid manifest");
    manifest
        .spec()
        .kubernetes
        .clone()
        .expect("has spec.kubernetes")
}

fn expand(version: &str, runtime: &str, cni: &str) -> Expansion {
    Catalog::builtin()
        .expand(&kubernetes(version, runtime, cni))
        .unwrap_or_else(|error| panic!("{version} {runtime} {cni}: {error}"))
}

fn binary<'a>(expansion: &'a Expansion, name: &str) -> &'a CatalogBinary {
    expansion
        .binaries
        .iter()
        .find(|binary| binary.name == name)
        .unwrap_or_else(|| panic!("{} has no binary `{name}`", expansion.kubernetes))
}

/// Every patch the catalog knows: `(version, minor's latest patch)` for each minor.
fn every_version() -> Vec<String> {
    let catalog = Catalog::builtin();
    catalog
        .data
        .kubernetes
        .iter()
        .flat_map(|minor| {
            (0..=minor.latest_patch).map(move |patch| format!("{}.{patch}", minor.minor))
        })
        .collect()
}

#[test]
fn embedded_catalog_parses_and_passes_its_checks() {
    Catalog::parse(CATALOG_YAML).expect("catalog.yaml is valid");
    assert_eq!(
        Catalog::builtin().minors(),
        ["v1.29", "v1.30", "v1.31", "v1.32", "v1.33"]
    );
}

/// `(version, pause, coredns, etcd)` as `kubeadm config images list` prints them, at the edges
/// of every range in catalog.yaml. Sources: FACTS.md, "kubeadm image tags".
const KUBEADM_TAGS: &[(&str, &str, &str, &str)] = &[
    ("v1.29.0", "3.9", "v1.11.1", "3.5.10-0"),
    ("v1.29.2", "3.9", "v1.11.1", "3.5.10-0"),
    ("v1.29.3", "3.9", "v1.11.1", "3.5.12-0"),
    ("v1.29.8", "3.9", "v1.11.1", "3.5.12-0"),
    ("v1.29.9", "3.9", "v1.11.1", "3.5.15-0"),
    ("v1.29.10", "3.9", "v1.11.1", "3.5.15-0"),
    ("v1.29.11", "3.9", "v1.11.1", "3.5.16-0"),
    ("v1.29.15", "3.9", "v1.11.1", "3.5.16-0"),
    ("v1.30.0", "3.9", "v1.11.1", "3.5.12-0"),
    ("v1.30.4", "3.9", "v1.11.1", "3.5.12-0"),
    ("v1.30.5", "3.9", "v1.11.3", "3.5.15-0"),
    ("v1.30.14", "3.9", "v1.11.3", "3.5.15-0"),
    ("v1.31.0", "3.10", "v1.11.1", "3.5.15-0"),
    ("v1.31.1", "3.10", "v1.11.3", "3.5.15-0"),
    ("v1.31.4", "3.10", "v1.11.3", "3.5.15-0"),
    ("v1.31.13", "3.10", "v1.11.3", "3.5.15-0"),
    ("v1.31.14", "3.10", "v1.11.3", "3.5.24-0"),
    ("v1.32.0", "3.10", "v1.11.3", "3.5.16-0"),
    ("v1.32.9", "3.10", "v1.11.3", "3.5.16-0"),
    ("v1.32.10", "3.10", "v1.11.3", "3.5.24-0"),
    ("v1.32.13", "3.10", "v1.11.3", "3.5.24-0"),
    ("v1.33.0", "3.10", "v1.12.0", "3.5.21-0"),
    ("v1.33.5", "3.10", "v1.12.0", "3.5.21-0"),
    ("v1.33.6", "3.10", "v1.12.0", "3.5.24-0"),
    ("v1.33.13", "3.10", "v1.12.0", "3.5.24-0"),
];

#[test]
fn kubeadm_image_tags_match_the_recorded_facts() {
    for &(version, pause, coredns, etcd) in KUBEADM_TAGS {
        let expansion = expand(version, "containerd", "none");
        let images = &expansion.images;
        for expected in [
            format!("registry.k8s.io/kube-apiserver:{version}"),
            format!("registry.k8s.io/kube-controller-manager:{version}"),
            format!("registry.k8s.io/kube-scheduler:{version}"),
            format!("registry.k8s.io/kube-proxy:{version}"),
            format!("registry.k8s.io/pause:{pause}"),
            format!("registry.k8s.io/coredns/coredns:{coredns}"),
            format!("registry.k8s.io/etcd:{etcd}"),
        ] {
            assert!(
                images.contains(&expected),
                "{version}: missing {expected} in {images:?}"
            );
        }
        // The etcd binary is the release the etcd image is built from.
        let release = etcd.split('-').next().expect("has a release");
        assert_eq!(
            binary(&expansion, "etcd").version,
            format!("v{release}"),
            "{version}"
        );
    }
}

#[test]
fn every_known_patch_expands_for_every_runtime_and_network_plugin() {
    let containerd: BTreeSet<&str> = [
        "kubeadm",
        "kubelet",
        "kubectl",
        "containerd",
        "runc",
        "crictl",
        "cni-plugins",
        "etcd",
        "helm",
    ]
    .into();
    let docker: BTreeSet<&str> = [
        "kubeadm",
        "kubelet",
        "kubectl",
        "docker",
        "cri-dockerd",
        "crictl",
        "cni-plugins",
        "etcd",
        "helm",
    ]
    .into();
    for version in every_version() {
        for runtime in RUNTIMES {
            for cni in CNIS {
                let expansion = expand(&version, runtime, cni);
                assert_eq!(expansion.kubernetes, version);
                let names: BTreeSet<&str> =
                    expansion.binaries.iter().map(|b| b.name.as_str()).collect();
                let expected = if runtime == "docker" {
                    &docker
                } else {
                    &containerd
                };
                assert_eq!(&names, expected, "{version} {runtime}");
                assert_eq!(
                    names.len(),
                    expansion.binaries.len(),
                    "{version}: duplicate binary"
                );

                let unique: BTreeSet<&String> = expansion.images.iter().collect();
                assert_eq!(
                    unique.len(),
                    expansion.images.len(),
                    "{version} {cni}: duplicate image"
                );
                assert!(
                    expansion
                        .images
                        .iter()
                        .any(|image| image.starts_with("ghcr.io/kube-vip/kube-vip:")),
                    "{version}: kube-vip is missing"
                );
                let chart = match cni {
                    "calico" => Some("tigera-operator"),
                    "cilium" => Some("cilium"),
                    "flannel" => Some("flannel"),
                    "hybridnet" => Some("hybridnet"),
                    "kube-ovn" => Some("kube-ovn"),
                    _ => None,
                };
                let charts: Vec<&str> = expansion.charts.iter().map(|c| c.name.as_str()).collect();
                assert_eq!(
                    charts,
                    chart.into_iter().collect::<Vec<_>>(),
                    "{version} {cni}"
                );
                // kube-* (4), pause, coredns, etcd, kube-vip, haproxy: 9 images besides the
                // plugin's.
                if cni == "none" {
                    assert_eq!(
                        expansion.images.len(),
                        9,
                        "{version}: {:?}",
                        expansion.images
                    );
                } else {
                    assert!(
                        expansion.images.len() > 8,
                        "{version} {cni}: no plugin images"
                    );
                }
            }
        }
    }
}

#[test]
fn network_plugins_per_minor() {
    // Which chart each minor installs; FACTS.md, "Network plugins", says why.
    let expected = [
        ("v1.29.15", "v3.29.4", "1.17.9"),
        ("v1.30.14", "v3.29.4", "1.18.14"),
        ("v1.31.14", "v3.30.5", "1.18.14"),
        ("v1.32.13", "v3.30.5", "1.18.14"),
        ("v1.33.13", "v3.30.5", "1.18.14"),
    ];
    for (version, calico, cilium) in expected {
        let calico_expansion = expand(version, "containerd", "calico");
        assert_eq!(calico_expansion.charts[0].version, calico, "{version}");
        assert!(
            calico_expansion
                .images
                .iter()
                .any(|image| image == &format!("{}/calico/node:{calico}", calico_registry(calico))),
            "{version}: {:?}",
            calico_expansion.images
        );
        let cilium_expansion = expand(version, "containerd", "cilium");
        assert_eq!(cilium_expansion.charts[0].version, cilium, "{version}");
        assert!(
            cilium_expansion
                .images
                .contains(&format!("quay.io/cilium/cilium:v{cilium}"))
        );
        assert!(
            cilium_expansion
                .images
                .contains(&format!("quay.io/cilium/operator-generic:v{cilium}"))
        );
    }
}

#[test]
fn hybridnet_and_kube_ovn_serve_every_minor_with_their_images() {
    // FACTS.md, "Hybridnet" and "Kube-OVN": one release each for every minor.
    for version in every_version() {
        for (cni, chart, images) in [
            (
                "hybridnet",
                "0.6.9",
                &["docker.io/hybridnetdev/hybridnet:v0.8.9"][..],
            ),
            (
                "kube-ovn",
                "v1.15.24",
                &[
                    "docker.io/kubeovn/kube-ovn:v1.15.24",
                    "docker.io/kubeovn/vpc-nat-gateway:v1.15.24",
                ][..],
            ),
        ] {
            let expansion = expand(&version, "containerd", cni);
            assert_eq!(expansion.charts[0].name, cni, "{version}");
            assert_eq!(expansion.charts[0].version, chart, "{version}");
            for image in images {
                assert!(
                    expansion.images.iter().any(|i| i == image),
                    "{version} {cni}: {image} missing from {:?}",
                    expansion.images
                );
            }
        }
    }
}

/// Calico 3.29's operator pulls from docker.io, 3.30's release metadata names quay.io.
fn calico_registry(version: &str) -> &'static str {
    if version.starts_with("v3.29.") {
        "docker.io"
    } else {
        "quay.io"
    }
}

#[test]
fn url_templates_use_only_the_manifest_placeholders() {
    for binary in &Catalog::builtin().data.binaries {
        for template in std::iter::once(&binary.url).chain(&binary.checksum_url) {
            let mut rest = template.as_str();
            while let Some(open) = rest.find('{') {
                let close = rest[open..].find('}').expect("balanced braces") + open;
                let name = &rest[open + 1..close];
                assert!(
                    PLACEHOLDERS.contains(&name),
                    "`{template}` uses `{{{name}}}`"
                );
                rest = &rest[close + 1..];
            }
            assert!(!rest.contains('}'), "`{template}` has a stray brace");
            assert!(
                template.starts_with("https://"),
                "`{template}` is not https"
            );
        }
    }
}

/// The strongest check of the templates: every expansion, written out as a manifest's
/// `spec.binaries`, passes the manifest parser (templates, names, versions, sha256 coverage of
/// both platforms).
#[test]
fn expansions_are_valid_manifest_binaries() {
    for minor in Catalog::builtin().minors() {
        for runtime in RUNTIMES {
            let expansion = expand(&format!("{minor}.0"), runtime, "calico");
            let mut text = String::from(
                "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata:\n  name: test\n\
                 spec:\n  platforms: [linux/amd64, linux/arm64]\n  binaries:\n",
            );
            for binary in &expansion.binaries {
                let _ = write!(
                    text,
                    "    - name: {}\n      version: \"{}\"\n      url: {}\n",
                    binary.name, binary.version, binary.url
                );
                if let Some(checksum_url) = &binary.checksum_url {
                    let _ = writeln!(text, "      checksumUrl: {checksum_url}");
                } else if binary.trust_on_first_use {
                    // What `sources` writes for it, so the parser still checks the URL.
                    let _ = writeln!(text, "      checksumUrl: {}", binary.url);
                } else {
                    text.push_str("      sha256:\n");
                    for (arch, hex) in &binary.sha256 {
                        let _ = writeln!(text, "        {arch}: {hex}");
                    }
                }
            }
            let manifest = Manifest::from_str_named(&text, "expansion.yaml")
                .unwrap_or_else(|error| panic!("{minor} {runtime}: {error}\n{text}"));
            assert_eq!(manifest.spec().binaries.len(), expansion.binaries.len());
        }
    }
}

#[test]
fn every_image_is_a_fully_qualified_tagged_reference() {
    let mut seen = BTreeSet::new();
    for version in every_version() {
        for cni in CNIS {
            seen.extend(expand(&version, "containerd", cni).images);
        }
    }
    for image in &seen {
        let reference: Reference = image
            .parse()
            .unwrap_or_else(|error| panic!("`{image}` does not parse: {error}"));
        assert_eq!(&reference.whole(), image, "`{image}` is not in normal form");
        assert!(reference.tag().is_some(), "`{image}` has no tag");
        let registry = image.split('/').next().expect("has a registry");
        assert!(
            registry.contains('.') && registry == reference.registry(),
            "`{image}` does not name its registry"
        );
    }
}

#[test]
fn an_unknown_minor_is_refused_naming_the_supported_ones() {
    for version in ["v1.28.15", "v1.34.0", "v2.0.0"] {
        let error = Catalog::builtin()
            .expand(&kubernetes(version, "containerd", "calico"))
            .expect_err(version);
        assert!(
            matches!(error, ExpandError::KubernetesNotInCatalog { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(&format!("`{version}`")), "{message}");
        assert!(
            message.contains("`v1.29`, `v1.30`, `v1.31`, `v1.32`, `v1.33`"),
            "{message}"
        );
    }
}

#[test]
fn a_patch_newer_than_the_catalog_is_refused() {
    let error = Catalog::builtin()
        .expand(&kubernetes("v1.31.15", "containerd", "calico"))
        .expect_err("v1.31.15 is not in the catalog");
    assert!(
        matches!(error, ExpandError::KubernetesPatchUnknown { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("`v1.31.15`") && message.contains("`v1.31.14`"),
        "{message}"
    );
}

#[test]
fn patch_releases_carry_their_own_version() {
    let linux_amd64: Platform = "linux/amd64".parse().expect("platform");
    for version in ["v1.31.0", "v1.31.9"] {
        let expansion = expand(version, "containerd", "flannel");
        assert_eq!(expansion.kubernetes, version);
        for name in ["kubeadm", "kubelet", "kubectl"] {
            let binary = binary(&expansion, name);
            assert_eq!(binary.version, version);
            assert_eq!(
                binary.url_for(&linux_amd64),
                format!("https://dl.k8s.io/release/{version}/bin/linux/amd64/{name}")
            );
            assert_eq!(
                binary.checksum_url_for(&linux_amd64).as_deref(),
                Some(
                    format!("https://dl.k8s.io/release/{version}/bin/linux/amd64/{name}.sha256")
                        .as_str()
                )
            );
        }
        assert!(
            expansion
                .images
                .contains(&format!("registry.k8s.io/kube-proxy:{version}"))
        );
    }
}

#[test]
fn docker_urls_spell_architectures_as_upstream_does() {
    let expansion = expand("v1.30.14", "docker", "calico");
    let docker = binary(&expansion, "docker");
    let amd64: Platform = "linux/amd64".parse().expect("platform");
    let arm64: Platform = "linux/arm64".parse().expect("platform");
    assert_eq!(
        docker.url_for(&amd64),
        "https://download.docker.com/linux/static/stable/x86_64/docker-28.5.2.tgz"
    );
    assert_eq!(
        docker.url_for(&arm64),
        "https://download.docker.com/linux/static/stable/aarch64/docker-28.5.2.tgz"
    );
    assert_eq!(docker.checksum_url_for(&amd64), None);
    // download.docker.com publishes no checksum: the lock pins it.
    assert!(docker.sha256.is_empty());
    assert!(docker.trust_on_first_use);
    // Everything else keeps Go's names.
    let cri_dockerd = binary(&expansion, "cri-dockerd");
    assert_eq!(
        cri_dockerd.url_for(&arm64),
        "https://github.com/Mirantis/cri-dockerd/releases/download/v0.3.26/cri-dockerd-0.3.26.arm64.tgz"
    );
    let containerd = binary(&expand("v1.30.14", "containerd", "none"), "containerd").clone();
    assert_eq!(
        containerd.url_for(&arm64),
        "https://github.com/containerd/containerd/releases/download/v1.7.30/containerd-1.7.30-linux-arm64.tar.gz"
    );
}

#[test]
fn json_has_the_shape_the_lab_seeder_reads() {
    let json = expand("v1.31.4", "containerd", "calico").to_json();
    let object = json.as_object().expect("an object");
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        ["binaries", "charts", "images", "kubernetes", "packages"]
    );
    assert_eq!(json["kubernetes"], "v1.31.4");
    assert_eq!(
        json["binaries"][0],
        json!({
            "name": "kubeadm",
            "version": "v1.31.4",
            "url": "https://dl.k8s.io/release/{version}/bin/{os}/{arch}/kubeadm",
            "checksumUrl": "https://dl.k8s.io/release/{version}/bin/{os}/{arch}/kubeadm.sha256",
        })
    );
    assert_eq!(json["images"][0], "registry.k8s.io/kube-apiserver:v1.31.4");
    assert_eq!(
        json["charts"],
        json!([{
            "name": "tigera-operator",
            "version": "v3.30.5",
            "repo": "https://docs.tigera.io/calico/charts",
            "images": [
                "quay.io/tigera/operator:v1.38.7",
                "quay.io/calico/node:v3.30.5",
                "quay.io/calico/cni:v3.30.5",
                "quay.io/calico/kube-controllers:v3.30.5",
                "quay.io/calico/typha:v3.30.5",
                "quay.io/calico/pod2daemon-flexvol:v3.30.5",
                "quay.io/calico/csi:v3.30.5",
                "quay.io/calico/node-driver-registrar:v3.30.5",
                "quay.io/calico/apiserver:v3.30.5",
                "quay.io/calico/key-cert-provisioner:v3.30.5",
                "quay.io/calico/goldmane:v3.30.5",
                "quay.io/calico/whisker:v3.30.5",
                "quay.io/calico/whisker-backend:v3.30.5",
            ],
        }])
    );
    // Every chart image is among the expansion's images.
    let cilium = expand("v1.32.4", "containerd", "cilium").to_json();
    let images = cilium["images"].as_array().expect("an array");
    assert_eq!(
        cilium["charts"][0]["images"],
        json!([
            "quay.io/cilium/cilium:v1.18.14",
            "quay.io/cilium/operator-generic:v1.18.14"
        ])
    );
    for image in cilium["charts"][0]["images"].as_array().expect("an array") {
        assert!(images.contains(image), "{image}");
    }

    let docker = expand("v1.31.4", "docker", "none").to_json();
    let listed = |name: &str| {
        docker["binaries"]
            .as_array()
            .expect("an array")
            .iter()
            .find(|binary| binary["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
            .clone()
    };
    let unpublished = listed("docker");
    assert!(unpublished.get("checksumUrl").is_none(), "{unpublished}");
    assert!(unpublished.get("sha256").is_none(), "{unpublished}");
    assert_eq!(unpublished["trustOnFirstUse"], true);
    assert_eq!(
        unpublished["archNames"],
        json!({"amd64": "x86_64", "arm64": "aarch64"})
    );
    let pinned = listed("cri-dockerd");
    assert!(pinned.get("trustOnFirstUse").is_none(), "{pinned}");
    assert_eq!(
        pinned["sha256"]["amd64"],
        "87f31c964d974cdce9c883c79b69e355c3c323e51d3a7d36cda140e6df7b8d5a"
    );
    assert_eq!(docker["charts"], json!([]));
}

#[test]
fn text_rendering_lists_everything() {
    let expansion = expand("v1.32.4", "docker", "cilium");
    let text = expansion.render_text();
    assert!(
        text.starts_with("Kubernetes v1.32.4: 9 binaries,"),
        "{text}"
    );
    for binary in &expansion.binaries {
        assert!(text.contains(&binary.name), "{text}");
    }
    for image in &expansion.images {
        assert!(text.contains(image.as_str()), "{text}");
    }
    assert!(text.contains("pinned sha256 (amd64, arm64)"), "{text}");
    let docker = text
        .lines()
        .find(|line| line.trim_start().starts_with("docker "))
        .unwrap_or_else(|| panic!("no docker row:\n{text}"));
    assert!(docker.contains(" 28.5.2 "), "{docker}");
    assert!(
        docker.contains(" pinned by the lock (no published checksum) "),
        "{docker}"
    );
    assert!(
        text.contains("[{arch}: amd64=x86_64, arm64=aarch64]"),
        "{text}"
    );
    assert!(text.contains("https://helm.cilium.io"), "{text}");
    assert!(
        text.lines().all(|line| line == line.trim_end()),
        "trailing spaces:\n{text}"
    );
    let none = expand("v1.32.4", "containerd", "none").render_text();
    assert!(none.contains("CHARTS\n  (none)\n"), "{none}");
}

#[test]
fn etcd_image_tags_name_their_release() {
    assert_eq!(etcd_release("3.5.15-0"), "v3.5.15");
    assert_eq!(etcd_release("3.6.1-1"), "v3.6.1");
    assert_eq!(etcd_release("3.5.24"), "v3.5.24");
}

#[test]
fn inconsistent_data_is_rejected() {
    let cases = [
        // Unknown field.
        ("latestPatch: 15", "latestPatch: 15\n    latest: 15"),
        // A kubeadm range with a gap.
        ("patches: [3, 8]", "patches: [4, 8]"),
        // Ranges that stop short of latestPatch.
        (
            "latestPatch: 14\n    kubeadm:\n      - {patches: [0, 4]",
            "latestPatch: 15\n    kubeadm:\n      - {patches: [0, 4]",
        ),
        // A component with no pinned sha256.
        (
            "      cri-dockerd: 0.3.26\n      crictl: v1.29.0",
            "      cri-dockerd: 0.3.25\n      crictl: v1.29.0",
        ),
        // Pinned by the lock and by a checksum file or pins at once.
        (
            "    trustOnFirstUse: true\n",
            "    trustOnFirstUse: true\n    checksumUrl: https://example.org/{version}.sha256\n",
        ),
        (
            "    trustOnFirstUse: true\n",
            "    trustOnFirstUse: true\n    sha256: {\"28.5.2\": {amd64: 692ecfc28333485d184f628b74c25b2894cee9495a51a5418ba60ef95bf733ca}}\n",
        ),
        // No way to verify at all.
        ("    trustOnFirstUse: true\n", ""),
        // A network plugin that is not defined.
        ("cilium: cilium-v1.17,", "cilium: cilium-v1.16,"),
        // Minors out of order.
        ("minor: v1.30", "minor: v1.28"),
        // A package twice.
        ("name: ethtool,", "name: socat,"),
        // An addon without images.
        (
            "    images:\n      - ghcr.io/spegel-org/spegel:v0.7.4\n",
            "    images: []\n",
        ),
        // An addon the catalog does not know.
        ("addons:\n  spegel:", "addons:\n  other:"),
        // A storage kind without images.
        (
            "    images:\n      - registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2\n",
            "    images: []\n",
        ),
    ];
    for (from, to) in cases {
        assert!(
            CATALOG_YAML.contains(from),
            "test case does not apply: {from}"
        );
        let broken = CATALOG_YAML.replacen(from, to, 1);
        assert!(Catalog::parse(&broken).is_err(), "accepted: {to}");
    }
}

/// `kubernetes` with the package-related choices added to its flow mapping.
fn kubernetes_with(version: &str, choices: &str) -> Kubernetes {
    let text = format!(
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata:\n  name: test\n\
         spec:\n  kubernetes: {{version: {version}, {choices}}}\n"
    );
    let manifest = Manifest::from_str_named(&text, "test.yaml").expect("valid manifest");
    manifest
        .spec()
        .kubernetes
        .clone()
        .expect("has spec.kubernetes")
}

#[test]
fn features_add_their_packages_with_scope_reason_and_commands() {
    let names = |choices: &str| -> Vec<(String, PackageScope, String, Vec<String>)> {
        let expansion = Catalog::builtin()
            .expand(&kubernetes_with("v1.32.4", choices))
            .expect("expands");
        expansion
            .packages
            .into_iter()
            .map(|root| (root.name, root.scope, root.reason, root.commands))
            .collect()
    };
    let kubeadm = |name: &str| {
        (
            name.to_owned(),
            PackageScope::Kubernetes,
            "kubeadm".to_owned(),
            vec![name.to_owned()],
        )
    };
    let base = vec![
        kubeadm("conntrack"),
        kubeadm("socat"),
        kubeadm("ebtables"),
        kubeadm("ethtool"),
    ];
    assert_eq!(names("cni: none"), base);
    let mut all = base.clone();
    all.extend([
        (
            "ipset".to_owned(),
            PackageScope::Kubernetes,
            "ipvs".to_owned(),
            vec!["ipset".to_owned()],
        ),
        (
            "ipvsadm".to_owned(),
            PackageScope::Kubernetes,
            "ipvs".to_owned(),
            vec!["ipvsadm".to_owned()],
        ),
        (
            "nfs-common".to_owned(),
            PackageScope::Kubernetes,
            "nfs".to_owned(),
            vec!["mount.nfs".to_owned()],
        ),
        (
            "nfs-kernel-server".to_owned(),
            PackageScope::NfsServer,
            "nfs".to_owned(),
            vec!["exportfs".to_owned()],
        ),
    ]);
    assert_eq!(names("kubeProxyMode: ipvs, storage: [nfs]"), all);
    assert_eq!(
        names("kubeProxyMode: ipvs, storage: [nfs], nodePackages: false"),
        []
    );
}

#[test]
fn nfs_storage_adds_the_provisioner_for_every_version() {
    let image = "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2";
    for version in every_version() {
        let expansion = Catalog::builtin()
            .expand(&kubernetes_with(
                &version,
                "cni: none, storage: [nfs], nodePackages: false",
            ))
            .unwrap_or_else(|error| panic!("{version}: {error}"));
        assert_eq!(
            expansion.charts,
            [CatalogChart {
                name: "nfs-subdir-external-provisioner".to_owned(),
                version: "4.0.18".to_owned(),
                source: CatalogChartSource::Repo(
                    "https://kubernetes-sigs.github.io/nfs-subdir-external-provisioner/".to_owned()
                ),
                images: vec![image.to_owned()],
            }],
            "{version}"
        );
        assert!(
            expansion.images.iter().any(|known| known == image),
            "{version}"
        );
    }
    let without = expand("v1.32.4", "containerd", "none");
    assert!(without.images.iter().all(|known| known != image));
}

#[test]
fn the_spegel_addon_adds_its_oci_chart_and_its_image_at_the_charts_app_version() {
    // FACTS.md, "Addons": chart 0.7.4 deploys its appVersion, v0.7.4.
    let image = "ghcr.io/spegel-org/spegel:v0.7.4";
    let spegel = CatalogChart {
        name: "spegel".to_owned(),
        version: "0.7.4".to_owned(),
        source: CatalogChartSource::Oci("oci://ghcr.io/spegel-org/helm-charts/spegel".to_owned()),
        images: vec![image.to_owned()],
    };
    for version in every_version() {
        let expansion = Catalog::builtin()
            .expand(&kubernetes_with(&version, "cni: none, addons: [spegel]"))
            .unwrap_or_else(|error| panic!("{version}: {error}"));
        assert_eq!(expansion.charts, std::slice::from_ref(&spegel), "{version}");
        assert!(
            expansion.images.iter().any(|known| known == image),
            "{version}"
        );
    }
    let both = Catalog::builtin()
        .expand(&kubernetes_with(
            "v1.32.4",
            "cni: none, storage: [nfs], addons: [spegel]",
        ))
        .expect("expands");
    let names: Vec<&str> = both
        .charts
        .iter()
        .map(|chart| chart.name.as_str())
        .collect();
    assert_eq!(names, ["nfs-subdir-external-provisioner", "spegel"]);
    let json = both.to_json();
    assert_eq!(
        json["charts"][1],
        json!({"name": "spegel", "version": "0.7.4",
               "oci": "oci://ghcr.io/spegel-org/helm-charts/spegel", "images": [image]})
    );
    assert_eq!(json["charts"][0]["oci"], Value::Null);
    assert!(
        both.render_text()
            .contains("  spegel                           0.7.4    oci://ghcr.io/spegel-org/helm-charts/spegel\n"),
        "{}",
        both.render_text()
    );
    let without = expand("v1.32.4", "containerd", "none");
    assert!(without.images.iter().all(|known| known != image));
}

#[test]
fn a_catalog_chart_needs_exactly_one_of_repo_and_oci() {
    let oci = "      oci: oci://ghcr.io/spegel-org/helm-charts/spegel\n";
    let cases = [
        (
            oci.to_owned(),
            format!("{oci}      repo: https://example.org/charts\n"),
            "catalog chart `spegel` sets both `repo` and `oci`; hint: keep exactly one",
        ),
        (
            oci.to_owned(),
            String::new(),
            "catalog chart `spegel` sets neither `repo` nor `oci`",
        ),
    ];
    for (from, to, expected) in cases {
        assert!(
            CATALOG_YAML.contains(&from),
            "test case does not apply: {from}"
        );
        let broken = CATALOG_YAML.replacen(&from, &to, 1);
        let error = Catalog::parse(&broken).expect_err("refused");
        let chain = format!("{:?}", anyhow::Error::from(error));
        assert!(chain.contains(expected), "{chain}");
    }
}

#[test]
fn text_and_json_show_the_packages() {
    let expansion = Catalog::builtin()
        .expand(&kubernetes_with(
            "v1.32.4",
            "kubeProxyMode: ipvs, storage: [nfs]",
        ))
        .expect("expands");
    let text = expansion.render_text();
    assert!(
        text.contains("PACKAGES (added to every set of spec.osPackages)\n  NAME               SCOPE       REASON   COMMANDS\n  conntrack          kubernetes  kubeadm  conntrack\n"),
        "{text}"
    );
    assert!(
        text.contains("  nfs-kernel-server  nfs_server  nfs      exportfs\n"),
        "{text}"
    );
    let json = expansion.to_json();
    assert_eq!(
        json["packages"][7],
        json!({"name": "nfs-kernel-server", "scope": "nfs_server", "commands": ["exportfs"], "reason": "nfs"})
    );
    let none = Catalog::builtin()
        .expand(&kubernetes_with("v1.32.4", "nodePackages: false"))
        .expect("expands")
        .render_text();
    assert!(
        none.ends_with("PACKAGES (added to every set of spec.osPackages)\n  (none)\n"),
        "{none}"
    );
}

#[test]
fn components_override_the_catalogs_versions_spelled_as_the_catalog_spells_them() {
    let version_of = |choices: &str, name: &str| -> String {
        let expansion = Catalog::builtin()
            .expand(&kubernetes_with("v1.33.0", choices))
            .expect("expands");
        let binary = expansion.binaries.iter().find(|b| b.name == name);
        binary.expect("the binary").version.clone()
    };
    // containerd's URLs carry the `v` literally, runc's and etcd's versions start with it.
    let table = [
        ("components: {containerd: 2.1.9}", "containerd", "2.1.9"),
        ("components: {containerd: v2.1.9}", "containerd", "2.1.9"),
        ("components: {runc: 1.2.6}", "runc", "v1.2.6"),
        ("components: {etcd: v3.5.16}", "etcd", "v3.5.16"),
    ];
    for (choices, name, expected) in table {
        assert_eq!(version_of(choices, name), expected, "{choices}");
    }
    // Without a choice, the catalog's.
    assert_eq!(version_of("cni: calico", "containerd"), "1.7.30");
}

#[test]
fn a_component_outside_the_cluster_or_without_a_pinned_sha256_is_refused() {
    let refused = |choices: &str| -> String {
        Catalog::builtin()
            .expand(&kubernetes_with("v1.33.0", choices))
            .expect_err("refused")
            .to_string()
    };
    let outside = refused("components: {docker: 28.5.2}");
    assert!(
        outside.contains(
            "component `docker` is not part of a cluster with container runtime `containerd`"
        ),
        "{outside}"
    );
    let unpinned = refused("containerRuntime: docker, components: {cri-dockerd: 0.3.99}");
    assert!(
        unpinned.contains("component `cri-dockerd` 0.3.99 has no sha256 in the version catalog"),
        "{unpinned}"
    );
}

#[test]
fn multus_adds_its_manifest_and_the_image_of_the_same_release_for_every_version() {
    for version in every_version() {
        let expansion = Catalog::builtin()
            .expand(&kubernetes_with(&version, "multiCni: multus"))
            .unwrap_or_else(|error| panic!("{version}: {error}"));
        let manifest = binary(&expansion, "multus");
        let image = format!(
            "ghcr.io/k8snetworkplumbingwg/multus-cni:{}",
            manifest.version
        );
        assert!(expansion.images.contains(&image), "{version}: {image}");
        assert_eq!(
            manifest.url_for(&"linux/arm64".parse::<Platform>().expect("platform")),
            format!(
                "https://raw.githubusercontent.com/k8snetworkplumbingwg/multus-cni/{}/deployments/multus-daemonset.yml",
                manifest.version
            )
        );
        // One file for every architecture: the same pin under each.
        let pins: Vec<&String> = manifest.sha256.values().collect();
        assert_eq!(pins.len(), 2, "{version}");
        assert!(pins.iter().all(|pin| *pin == pins[0]), "{version}");
    }
    let without = expand("v1.32.4", "containerd", "calico");
    assert!(!without.binaries.iter().any(|b| b.name == "multus"));
    assert!(
        !without
            .images
            .iter()
            .any(|image| image.contains("multus-cni"))
    );
}
