//! `spec.cni`: the network plugin and the cluster's address ranges, checked against each
//! other.

use std::collections::BTreeMap;

use bundle_spec::diagnostics::SourceLocation;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::InventoryError;
use super::cidr::{Cidr, ClusterCidr};
use super::config::CniConfig;
use super::document::Context;
use super::raw::RawCni;

pub(super) fn cni(
    cx: &mut Context,
    raw: Spanned<RawCni>,
    extra: &mut BTreeMap<String, Value>,
) -> Result<CniConfig, InventoryError> {
    let at = cx.at(&raw);
    let raw = raw.value;
    cx.keep(raw.extra, RawCni::FIELDS, "cni.", extra);
    let defaults = CniConfig::default();
    let pod_at = raw.pod_cidr.as_ref().map_or(at.clone(), |raw| cx.at(raw));
    let service_at = raw.service_cidr.as_ref().map_or(at, |raw| cx.at(raw));
    let cni = CniConfig {
        plugin: raw.kind.unwrap_or(defaults.plugin),
        multi_cni: raw.multi_cni.unwrap_or(defaults.multi_cni),
        pod_cidr: cluster_cidr(cx, raw.pod_cidr.as_ref(), "cni.pod_cidr", Cidr::DEFAULT_POD)?,
        service_cidr: cluster_cidr(
            cx,
            raw.service_cidr.as_ref(),
            "cni.service_cidr",
            Cidr::DEFAULT_SERVICE,
        )?,
        max_pods: number(
            cx,
            raw.max_pods.as_ref(),
            "cni.max_pods",
            1,
            i64::from(i32::MAX),
        )?
        .unwrap_or(defaults.max_pods),
        ipv4_mask_size: number(cx, raw.ipv4_mask_size.as_ref(), "cni.ipv4_mask_size", 1, 32)?
            .unwrap_or(defaults.ipv4_mask_size),
        ipv6_mask_size: number(
            cx,
            raw.ipv6_mask_size.as_ref(),
            "cni.ipv6_mask_size",
            1,
            128,
        )?
        .unwrap_or(defaults.ipv6_mask_size),
    };
    for (cidr, mask, raw_mask, field) in [
        (
            cni.pod_cidr.ipv4(),
            cni.ipv4_mask_size,
            &raw.ipv4_mask_size,
            "cni.ipv4_mask_size",
        ),
        (
            cni.pod_cidr.ipv6(),
            cni.ipv6_mask_size,
            &raw.ipv6_mask_size,
            "cni.ipv6_mask_size",
        ),
    ] {
        let Some(cidr) = cidr else { continue };
        let at = raw_mask.as_ref().map_or(pod_at.clone(), |raw| cx.at(raw));
        check_node_ranges(&cni, cidr, mask, field, at)?;
    }
    check_overlap(&cni, service_at)?;
    Ok(cni)
}

/// `value` as a cluster range, or the default.
fn cluster_cidr(
    cx: &Context,
    raw: Option<&Spanned<String>>,
    field: &'static str,
    default: Cidr,
) -> Result<ClusterCidr, InventoryError> {
    let Some(raw) = raw else {
        return Ok(ClusterCidr::single(default));
    };
    raw.value
        .parse()
        .map_err(|source| InventoryError::InvalidCidr {
            at: cx.at(raw),
            field,
            value: raw.value.clone(),
            source,
        })
}

/// A number from `min` to `max`, converted to the field's type.
fn number<T: TryFrom<i64>>(
    cx: &Context,
    raw: Option<&Spanned<i64>>,
    field: &'static str,
    min: i64,
    max: i64,
) -> Result<Option<T>, InventoryError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let out_of_range = || InventoryError::OutOfRange {
        at: cx.at(raw),
        field,
        value: raw.value,
        min,
        max,
    };
    if !(min..=max).contains(&raw.value) {
        return Err(out_of_range());
    }
    T::try_from(raw.value).map(Some).map_err(|_| out_of_range())
}

/// Each node gets a `/mask` range out of `cidr`: it must fit, and hold `max_pods` pods (the
/// network and broadcast addresses aside, as KubeKey's precheck counts).
fn check_node_ranges(
    cni: &CniConfig,
    cidr: Cidr,
    mask: u8,
    field: &'static str,
    at: SourceLocation,
) -> Result<(), InventoryError> {
    if mask < cidr.prefix() {
        return Err(InventoryError::MaskTooWide {
            at,
            field,
            mask,
            pod_cidr: cidr,
        });
    }
    let host_bits = u32::from(cidr.bit_width() - mask);
    let addresses = 2_u64
        .checked_pow(host_bits)
        .map_or(u64::MAX, |count| count.saturating_sub(2));
    if u64::from(cni.max_pods) > addresses {
        return Err(InventoryError::TooManyPods {
            at,
            max_pods: cni.max_pods,
            field,
            mask,
            addresses,
        });
    }
    Ok(())
}

/// Pod and service addresses must never be confused.
fn check_overlap(cni: &CniConfig, at: SourceLocation) -> Result<(), InventoryError> {
    for service in cni.service_cidr.ranges() {
        if let Some(pod) = cni.pod_cidr.ranges().find(|pod| pod.overlaps(&service)) {
            return Err(InventoryError::CidrOverlap { at, pod, service });
        }
    }
    Ok(())
}
