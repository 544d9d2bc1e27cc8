//! From the raw inventory document to [`Inventory`].

use std::path::Path;
use std::sync::Arc;

use bundle_spec::diagnostics::parse_yaml;
use serde_saphyr::Spanned;

use super::document::{Context, metadata_name, required};
use super::inventory::{Inventory, K8S_CLUSTER};
use super::raw::{RawInventoryDocument, RawInventorySpec};
use super::{InventoryError, document};
use super::{groups, hosts};

/// Reading: here rather than beside the type, so that the type's module needs none of the
/// checks (which build it).
impl Inventory {
    /// Reads and validates the inventory at `path`; errors name the path as given.
    pub fn from_path(path: &Path) -> Result<Self, InventoryError> {
        let text = document::read(path)?;
        Self::from_str_named(&text, &path.display().to_string())
    }

    /// Parses and validates inventory `text`; `name` (usually a file name) prefixes the
    /// locations in errors and warnings.
    pub fn from_str_named(text: &str, name: &str) -> Result<Self, InventoryError> {
        let file: Arc<str> = Arc::from(name);
        document::check_header(text, &file, document::INVENTORY_KIND)?;
        inventory(text, &file)
    }
}

/// Parses and validates an inventory whose header was checked.
pub(super) fn inventory(text: &str, file: &Arc<str>) -> Result<Inventory, InventoryError> {
    let document: Spanned<RawInventoryDocument> = parse_yaml(text, file)?;
    let mut cx = Context::new(file);
    let root = cx.at(&document);
    let document = document.value;
    cx.drop_extra(document.extra, RawInventoryDocument::FIELDS, "");
    let name = metadata_name(&mut cx, document.metadata);
    let spec = required(document.spec, "spec", &root)?;
    let spec_at = cx.at(&spec);
    let spec = spec.value;
    cx.drop_extra(spec.extra, RawInventorySpec::FIELDS, "");
    let raw_hosts = required(spec.hosts, "hosts", &spec_at)?;
    let mut hosts = hosts::validate(&mut cx, raw_hosts)?;
    let raw_groups = spec.groups.unwrap_or_default();
    let groups = groups::validate(&mut cx, raw_groups, &mut hosts, &spec_at)?;
    Ok(Inventory {
        source_name: file.to_string(),
        name,
        hosts,
        groups,
        vars: spec.vars.unwrap_or_default(),
        warnings: cx.into_warnings(),
    })
}

impl Inventory {
    /// Every host of `k8s_cluster` becomes a Kubernetes node of its name, which kubeadm accepts
    /// only as a lowercase RFC 1123 subdomain. Not checked when reading: the precheck reports
    /// such names among its other findings; the plan refuses them with this error, which names
    /// the inventory file and the host's line.
    pub fn check_node_names(&self) -> Result<(), InventoryError> {
        let invalid = self
            .group_members(K8S_CLUSTER)
            .into_iter()
            .find(|host| !hosts::is_node_name(&host.name));
        match invalid {
            Some(host) => Err(InventoryError::InvalidNodeName {
                at: host.location.clone(),
                name: host.name.clone(),
            }),
            None => Ok(()),
        }
    }
}
