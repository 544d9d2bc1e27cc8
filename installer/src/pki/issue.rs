//! Making keys and certificates with rcgen, shaped as kubeadm's `pkiutil` shapes them.
//!
//! - Keys: RSA 2048 (kubeadm's default `encryptionAlgorithm`), written PKCS#8.
//! - CAs: self-signed, `CA:TRUE` without a path length, key usages `digitalSignature`,
//!   `keyEncipherment` and `keyCertSign`, and the common name repeated as a DNS SAN.
//! - Leaves: `CA:FALSE`, key usages `digitalSignature` and `keyEncipherment`, the extended key
//!   usages of the catalogue, and an authority key identifier naming the CA's key.
//! - Subjects: `O` before `CN`, the order Go writes them in.
//! - Validity: from five minutes ago (kubeadm's `CertificateBackdate`, for nodes whose clock is
//!   a little behind) to 10 years (CAs) or 1 year (leaves) from now.

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use super::spec::{CaId, LeafSpec, Usage};

/// How long a CA is valid: kubeadm's `CACertificateValidityPeriod`.
pub(super) const CA_VALIDITY: Duration = Duration::from_secs(3650 * 24 * 3600);
/// How long a leaf is valid: kubeadm's `CertificateValidityPeriod`.
pub(super) const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How far back a certificate starts: kubeadm's `CertificateBackdate`.
pub(super) const BACKDATE: Duration = Duration::from_secs(5 * 60);

/// A certificate and key just made, in PEM.
#[derive(Debug)]
pub(super) struct Made {
    /// The certificate.
    pub(super) cert_pem: String,
    /// The key (PKCS#8).
    pub(super) key_pem: String,
}

/// A new RSA 2048 key.
pub(super) fn new_key() -> Result<KeyPair, rcgen::Error> {
    KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256)
}

/// A new self-signed CA, and the issuer that signs with it.
pub(super) fn new_ca(
    ca: CaId,
    now: SystemTime,
) -> Result<(Made, Issuer<'static, KeyPair>), rcgen::Error> {
    let mut params = CertificateParams::new(vec![ca.common_name().to_owned()])?;
    params.distinguished_name = subject(ca.common_name(), None);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    set_validity(&mut params, now, CA_VALIDITY);
    let key = new_key()?;
    let cert = params.self_signed(&key)?;
    let made = Made {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    let issuer = Issuer::new(params, key);
    Ok((made, issuer))
}

/// A new leaf certificate for `leaf` with a new key, signed by `issuer`.
pub(super) fn new_leaf(
    leaf: &LeafSpec,
    issuer: &Issuer<'_, KeyPair>,
    now: SystemTime,
) -> Result<Made, rcgen::Error> {
    let key = new_key()?;
    Ok(Made {
        cert_pem: sign_leaf(leaf, &key, issuer, now)?,
        key_pem: key.serialize_pem(),
    })
}

/// A leaf certificate for `leaf` with the key `key`, signed by `issuer`, valid from `now`
/// (less [`BACKDATE`]): what a renewal makes.
pub(super) fn sign_leaf(
    leaf: &LeafSpec,
    key: &KeyPair,
    issuer: &Issuer<'_, KeyPair>,
    now: SystemTime,
) -> Result<String, rcgen::Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(&leaf.common_name, leaf.organization.as_deref());
    params.subject_alt_names = sans(leaf)?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = match leaf.usage {
        Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
        Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        Usage::Both => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
    };
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now, LEAF_VALIDITY);
    Ok(params.signed_by(key, issuer)?.pem())
}

fn subject(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    if let Some(organization) = organization {
        name.push(DnType::OrganizationName, organization);
    }
    name.push(DnType::CommonName, common_name);
    name
}

fn sans(leaf: &LeafSpec) -> Result<Vec<SanType>, rcgen::Error> {
    let dns = leaf
        .dns
        .iter()
        .map(|name| Ok(SanType::DnsName(name.as_str().try_into()?)));
    let ips = leaf.ips.iter().map(|ip| Ok(SanType::IpAddress(*ip)));
    dns.chain(ips).collect()
}

/// From [`BACKDATE`] before `now` to `valid_for` after it.
fn set_validity(params: &mut CertificateParams, now: SystemTime, valid_for: Duration) {
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + since_epoch.saturating_sub(BACKDATE);
    params.not_after = epoch + since_epoch + valid_for;
}
