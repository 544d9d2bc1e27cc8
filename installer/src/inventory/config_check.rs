//! From the raw config document to [`Config`]: defaults filled in, every value checked.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use bundle_spec::manifest::{
    KubernetesVersion, SourceLocation, is_env_name, is_host_port, parse_yaml,
};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::config::{
    Addon, Config, ControlPlaneEndpoint, EndpointKind, ExternalRegistry, ImageRegistry,
    KernelVersion, KubeVip, KubeVipMode, KubernetesConfig, NfsConfig, PrecheckConfig,
    RegistryAddress, StorageClassConfig,
};
use super::document::{Context, is_host, metadata_name, port, required};
use super::raw::{
    EndpointType, RawAddon, RawAddonChart, RawAddonSources, RawClusterRequire, RawConfigDocument,
    RawConfigSpec, RawCri, RawEndpoint, RawEtcd, RawImageRegistry, RawKubeProxy, RawKubeVip,
    RawKubernetes, RawNfs, RawNfsStorageClass, RawRegistryAuth, RawStorageClass, RegistryType,
};
use super::{InventoryError, document};

/// Reading: here rather than beside the type, so that the type's module needs none of the
/// checks (which build it).
impl Config {
    /// Reads and validates the config at `path`; errors name the path as given.
    pub fn from_path(path: &Path) -> Result<Self, InventoryError> {
        let text = document::read(path)?;
        Self::from_str_named(&text, &path.display().to_string())
    }

    /// Parses and validates config `text`; `name` (usually a file name) prefixes the locations
    /// in errors and warnings.
    pub fn from_str_named(text: &str, name: &str) -> Result<Self, InventoryError> {
        let file: Arc<str> = Arc::from(name);
        document::check_header(text, &file, document::CONFIG_KIND)?;
        config(text, &file)
    }
}

/// Parses and validates a config whose header was checked.
pub(super) fn config(text: &str, file: &Arc<str>) -> Result<Config, InventoryError> {
    let document: Spanned<RawConfigDocument> = parse_yaml(text, file)?;
    let mut cx = Context::new(file);
    let document = document.value;
    cx.drop_extra(document.extra, RawConfigDocument::FIELDS, "");
    let mut config = Config {
        source_name: file.to_string(),
        name: metadata_name(&mut cx, document.metadata),
        ..Config::default()
    };
    if let Some(spec) = document.spec {
        apply_spec(&mut cx, spec, &mut config)?;
    }
    config.warnings = cx.into_warnings();
    Ok(config)
}

/// Overrides the defaults in `config` with what `spec` sets.
fn apply_spec(
    cx: &mut Context,
    spec: RawConfigSpec,
    config: &mut Config,
) -> Result<(), InventoryError> {
    let extra = &mut config.extra;
    cx.keep(spec.extra, RawConfigSpec::FIELDS, "", extra);
    if let Some(raw) = spec.kubernetes {
        config.kubernetes = kubernetes(cx, raw, extra)?;
    }
    if let Some(raw) = spec.etcd {
        cx.keep(raw.extra, RawEtcd::FIELDS, "etcd.", extra);
        if let Some(deployment_type) = raw.deployment_type {
            config.etcd.deployment_type = deployment_type;
        }
    }
    if let Some(raw) = spec.cri {
        cx.keep(raw.extra, RawCri::FIELDS, "cri.", extra);
        if let Some(container_manager) = raw.container_manager {
            config.cri.container_manager = container_manager;
        }
    }
    if let Some(raw) = spec.cni {
        config.cni = super::network::cni(cx, raw, extra)?;
    }
    if let Some(raw) = spec.image_registry {
        config.image_registry = image_registry(
            cx,
            raw,
            extra,
            &mut config.registry_address,
            &mut config.upstream_fallback,
        )?;
    }
    if let Some(raw) = spec.cluster_require {
        config.precheck = precheck(cx, raw, extra)?;
    }
    for (index, raw) in spec.addons.into_iter().flatten().enumerate() {
        let addon = addon(cx, raw, index, &config.addons, extra)?;
        config.addons.push(addon);
    }
    if let Some(raw) = spec.nfs {
        config.nfs = nfs(cx, raw, extra)?;
    }
    if let Some(raw) = spec.storage_class {
        config.storage_class = storage_class(cx, raw, extra);
    }
    for key in spec.trusted_keys.into_iter().flatten() {
        config.trusted_keys.push(relative_to_config(cx, &key.value));
    }
    Ok(())
}

/// `spec.nfs`: the share directory must be an absolute path that `/etc/exports` can hold as
/// one field (no white space, no `"`, nothing `..` could lead out of).
fn nfs(
    cx: &mut Context,
    raw: RawNfs,
    extra: &mut BTreeMap<String, Value>,
) -> Result<NfsConfig, InventoryError> {
    cx.keep(raw.extra, RawNfs::FIELDS, "nfs.", extra);
    let Some(dir) = raw.share_dir else {
        return Ok(NfsConfig::default());
    };
    if !is_share_dir(&dir.value) {
        return Err(InventoryError::InvalidShareDir {
            at: cx.at(&dir),
            dir: dir.value,
        });
    }
    Ok(NfsConfig {
        share_dir: dir.value,
    })
}

/// Whether `dir` is an absolute path fit for an `/etc/exports` line.
fn is_share_dir(dir: &str) -> bool {
    dir.starts_with('/')
        && !dir.trim_end_matches('/').is_empty()
        && !dir.split('/').any(|part| part == "." || part == "..")
        && !dir
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\')
}

/// `spec.storage_class`: booleans only, so nothing to reject beyond their type.
fn storage_class(
    cx: &mut Context,
    raw: RawStorageClass,
    extra: &mut BTreeMap<String, Value>,
) -> StorageClassConfig {
    cx.keep(raw.extra, RawStorageClass::FIELDS, "storage_class.", extra);
    let mut config = StorageClassConfig::default();
    if let Some(nfs) = raw.nfs {
        cx.keep(
            nfs.extra,
            RawNfsStorageClass::FIELDS,
            "storage_class.nfs.",
            extra,
        );
        config.nfs.enabled = nfs.enabled.unwrap_or(false);
        config.nfs.default = nfs.default.unwrap_or(false);
    }
    config
}

/// `spec.addons[index]`.
fn addon(
    cx: &mut Context,
    raw: Spanned<RawAddon>,
    index: usize,
    before: &[Addon],
    extra: &mut BTreeMap<String, Value>,
) -> Result<Addon, InventoryError> {
    let at = cx.at(&raw);
    let raw = raw.value;
    let prefix = format!("addons.{index}.");
    cx.keep(raw.extra, RawAddon::FIELDS, &prefix, extra);
    let name = required(raw.name, "name", &at)?;
    let reason = if !is_label(&name.value) {
        Some("a release name is a lowercase DNS-1123 label")
    } else if before.iter().any(|addon| addon.name == name.value) {
        Some("an earlier addon has this name")
    } else {
        None
    };
    if let Some(reason) = reason {
        return Err(InventoryError::InvalidAddon {
            at: cx.at(&name),
            field: "name",
            value: name.value,
            reason,
        });
    }
    let namespace = match raw.namespace {
        Some(namespace) if !is_label(&namespace.value) => {
            return Err(InventoryError::InvalidAddon {
                at: cx.at(&namespace),
                field: "namespace",
                value: namespace.value,
                reason: "a namespace is a lowercase DNS-1123 label",
            });
        }
        Some(namespace) => namespace.value,
        None => "kube-system".to_owned(),
    };
    let sources = required(raw.sources, "sources", &at)?;
    let sources_at = cx.at(&sources);
    let mut sources = sources.value;
    let unknown = std::mem::take(&mut sources.extra);
    cx.keep(
        unknown,
        RawAddonSources::FIELDS,
        &format!("{prefix}sources."),
        extra,
    );
    let chart = required(sources.chart, "chart", &sources_at)?;
    let chart_at = cx.at(&chart);
    let mut chart = chart.value;
    let unknown = std::mem::take(&mut chart.extra);
    cx.keep(
        unknown,
        RawAddonChart::FIELDS,
        &format!("{prefix}sources.chart."),
        extra,
    );
    let chart_name = required(chart.name, "name", &chart_at)?;
    let mut set = Vec::new();
    for pair in chart.values.into_iter().flatten() {
        if !pair.value.contains('=') {
            return Err(InventoryError::InvalidAddon {
                at: cx.at(&pair),
                field: "values",
                value: pair.value,
                reason: "each value is `key=value`, as `helm --set` takes it",
            });
        }
        set.push(pair.value);
    }
    let values_file = chart
        .values_file
        .map(|file| relative_to_config(cx, &file.value));
    Ok(Addon {
        name: name.value,
        namespace,
        chart: chart_name.value,
        set,
        values_file,
    })
}

/// `path` as written in the config: relative to the config file's directory.
fn relative_to_config(cx: &Context, path: &str) -> std::path::PathBuf {
    let path = std::path::PathBuf::from(path);
    match Path::new(cx.file.as_ref()).parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

/// A lowercase DNS-1123 label (helm release names, namespaces).
fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 53
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

fn kubernetes(
    cx: &mut Context,
    raw: RawKubernetes,
    extra: &mut BTreeMap<String, Value>,
) -> Result<KubernetesConfig, InventoryError> {
    cx.keep(raw.extra, RawKubernetes::FIELDS, "kubernetes.", extra);
    let mut kubernetes = KubernetesConfig::default();
    if let Some(version) = raw.kube_version {
        let parsed = KubernetesVersion::parse(&version.value).ok_or_else(|| {
            InventoryError::InvalidKubeVersion {
                at: cx.at(&version),
                version: version.value.clone(),
            }
        })?;
        kubernetes.kube_version = Some(parsed);
    }
    if let Some(raw) = raw.control_plane_endpoint {
        kubernetes.control_plane_endpoint = endpoint(cx, raw, extra)?;
    }
    if let Some(raw) = raw.kube_proxy {
        let prefix = "kubernetes.kube_proxy.";
        cx.keep(raw.extra, RawKubeProxy::FIELDS, prefix, extra);
        if let Some(mode) = raw.mode {
            kubernetes.kube_proxy_mode = mode;
        }
    }
    Ok(kubernetes)
}

fn endpoint(
    cx: &mut Context,
    raw: Spanned<RawEndpoint>,
    extra: &mut BTreeMap<String, Value>,
) -> Result<ControlPlaneEndpoint, InventoryError> {
    let at = cx.at(&raw);
    let raw = raw.value;
    let prefix = "kubernetes.control_plane_endpoint.";
    cx.keep(raw.extra, RawEndpoint::FIELDS, prefix, extra);
    let mut endpoint = ControlPlaneEndpoint::default();
    if let Some(host) = raw.host {
        if !is_host(&host.value) {
            return Err(InventoryError::InvalidHost {
                at: cx.at(&host),
                field: "control_plane_endpoint.host",
                value: host.value,
            });
        }
        endpoint.host = host.value;
    }
    if let Some(value) = raw.port {
        endpoint.port = port(cx, &value, "control_plane_endpoint.port")?;
    }
    // KubeKey's defaults carry a `kube_vip` section (its image) whatever the type: its other
    // keys are kept, and `address` is only required with `type: kube-vip`.
    let kube_vip = raw.kube_vip.map(|raw| {
        let at = cx.at(&raw);
        let mut raw = raw.value;
        let unknown = std::mem::take(&mut raw.extra);
        cx.keep(
            unknown,
            RawKubeVip::FIELDS,
            &format!("{prefix}kube_vip."),
            extra,
        );
        (raw, at)
    });
    endpoint.kind = match raw.kind.map(|kind| kind.value) {
        None | Some(EndpointType::Local) => EndpointKind::Local,
        Some(EndpointType::Haproxy) => EndpointKind::Haproxy,
        Some(EndpointType::KubeVip) => {
            let (raw, at) = required(kube_vip, "kube_vip", &at)?;
            EndpointKind::KubeVip(self::kube_vip(cx, raw, &at)?)
        }
    };
    Ok(endpoint)
}

fn kube_vip(cx: &Context, raw: RawKubeVip, at: &SourceLocation) -> Result<KubeVip, InventoryError> {
    let address = raw.address.filter(|address| !address.value.is_empty());
    let address = required(address, "address", at)?;
    let parsed: IpAddr = address
        .value
        .parse()
        .map_err(|_| InventoryError::InvalidIp {
            at: cx.at(&address),
            field: "kube_vip.address",
            value: address.value.clone(),
            family: "IP",
        })?;
    Ok(KubeVip {
        address: parsed,
        mode: raw.mode.unwrap_or(KubeVipMode::Arp),
    })
}

fn image_registry(
    cx: &mut Context,
    raw: Spanned<RawImageRegistry>,
    extra: &mut BTreeMap<String, Value>,
    address_out: &mut RegistryAddress,
    fallback_out: &mut bool,
) -> Result<ImageRegistry, InventoryError> {
    let at = cx.at(&raw);
    let raw = raw.value;
    cx.keep(
        raw.extra,
        RawImageRegistry::FIELDS,
        "image_registry.",
        extra,
    );
    if let Some(fallback) = raw.upstream_fallback {
        *fallback_out = fallback;
    }
    if let Some(auth) = raw.auth {
        let mut auth = auth.value;
        let unknown = std::mem::take(&mut auth.extra);
        cx.keep(
            unknown,
            RawRegistryAuth::FIELDS,
            "image_registry.auth.",
            extra,
        );
        if let Some(address) = auth.registry {
            if !is_host_port(&address.value) {
                return Err(InventoryError::InvalidRegistryAddress {
                    at: cx.at(&address),
                    address: address.value,
                });
            }
            *address_out = RegistryAddress::parse(&address.value).ok_or_else(|| {
                InventoryError::InvalidRegistryAddress {
                    at: cx.at(&address),
                    address: address.value.clone(),
                }
            })?;
        }
    }
    if raw.kind.unwrap_or(RegistryType::Kk) == RegistryType::Kk {
        let fields = [
            ("address", &raw.address),
            ("username", &raw.username),
            ("password_env", &raw.password_env),
            ("ca_file", &raw.ca_file),
        ];
        if let Some((field, Some(value))) = fields.into_iter().find(|(_, value)| value.is_some()) {
            return Err(InventoryError::RegistryFieldNeedsExternal {
                at: cx.at(value),
                field,
            });
        }
        if let Some(harbor) = &raw.harbor {
            return Err(InventoryError::RegistryFieldNeedsExternal {
                at: cx.at(harbor),
                field: "harbor",
            });
        }
        return Ok(ImageRegistry::Kk);
    }
    let address = required(raw.address, "address", &at)?;
    if !is_host_port(&address.value) {
        return Err(InventoryError::InvalidRegistryAddress {
            at: cx.at(&address),
            address: address.value,
        });
    }
    let (username, password_env) = match (raw.username, raw.password_env) {
        (Some(username), Some(env)) if is_env_name(&env.value) => {
            (Some(username.value), Some(env.value))
        }
        (Some(_), Some(env)) => {
            return Err(InventoryError::InvalidEnvName {
                at: cx.at(&env),
                name: env.value,
            });
        }
        (None, None) => (None, None),
        _ => return Err(InventoryError::IncompleteCredentials { at }),
    };
    let ca_file = raw.ca_file.map(|file| {
        if file.value.trim().is_empty() {
            return Err(InventoryError::EmptyCaFile { at: cx.at(&file) });
        }
        Ok(relative_to_config(cx, &file.value))
    });
    Ok(ImageRegistry::External(ExternalRegistry {
        address: address.value,
        username,
        password_env,
        ca_file: ca_file.transpose()?,
        harbor: raw.harbor.is_some_and(|h| h.value),
    }))
}

fn precheck(
    cx: &mut Context,
    raw: RawClusterRequire,
    extra: &mut BTreeMap<String, Value>,
) -> Result<PrecheckConfig, InventoryError> {
    cx.keep(
        raw.extra,
        RawClusterRequire::FIELDS,
        "cluster_require.",
        extra,
    );
    let defaults = PrecheckConfig::default();
    let min_kernel_version = match raw.min_kernel_version {
        None => defaults.min_kernel_version,
        Some(version) => KernelVersion::parse(&version.value).ok_or_else(|| {
            InventoryError::InvalidKernelVersion {
                at: cx.at(&version),
                version: version.value.clone(),
            }
        })?,
    };
    Ok(PrecheckConfig {
        allow_unsupported_distribution: raw
            .allow_unsupported_distribution_setup
            .unwrap_or(defaults.allow_unsupported_distribution),
        min_control_plane_memory_mb: raw
            .minimal_master_memory_mb
            .map_or(defaults.min_control_plane_memory_mb, |mb| mb.value),
        min_worker_memory_mb: raw
            .minimal_node_memory_mb
            .map_or(defaults.min_worker_memory_mb, |mb| mb.value),
        min_kernel_version,
    })
}
