//! From the raw inventory document to [`Inventory`].

use std::sync::Arc;

use bundle_spec::diagnostics::parse_yaml;
use serde_saphyr::Spanned;

use super::InventoryError;
use super::document::{Context, metadata_name, required};
use super::inventory::Inventory;
use super::raw::{RawInventoryDocument, RawInventorySpec};
use super::{groups, hosts};

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
