//! `kk-install registry cert`: a CA and a serving certificate for the registry, with rcgen.
//!
//! The CA is created once and reused: running the command again for other names signs a new
//! serving certificate with the same CA, so nodes that trust `ca.crt` keep trusting the registry.
//! (The cluster PKI will use the same CA later.) Keys are written 0600, certificates 0644, each
//! through a temporary file renamed into place.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// The files a `registry cert` run leaves in its directory.
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) ca_cert: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// Creates (or reuses) `dir/ca.crt` + `dir/ca.key` and issues `dir/registry.crt` +
/// `dir/registry.key` for `names` (DNS names or IP addresses).
pub(crate) fn issue(dir: &Path, names: &[String]) -> anyhow::Result<Issued> {
    anyhow::ensure!(
        !names.is_empty(),
        "give at least one name or address with `--names`"
    );
    fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let ca = load_or_create_ca(dir)?;
    let mut params = CertificateParams::new(names.to_vec()).context("invalid `--names`")?;
    params.distinguished_name = name("kk registry");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate().context("cannot generate a key")?;
    let cert = params
        .signed_by(&key, &ca)
        .context("cannot sign the registry certificate")?;
    let issued = Issued {
        ca_cert: dir.join("ca.crt"),
        cert: dir.join("registry.crt"),
        key: dir.join("registry.key"),
    };
    write(&issued.key, key.serialize_pem().as_bytes(), 0o600)?;
    write(&issued.cert, cert.pem().as_bytes(), 0o644)?;
    Ok(issued)
}

fn name(common: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common);
    name
}

fn load_or_create_ca(dir: &Path) -> anyhow::Result<Issuer<'static, KeyPair>> {
    let (cert_path, key_path) = (dir.join("ca.crt"), dir.join("ca.key"));
    if cert_path.exists() && key_path.exists() {
        let key_pem = fs::read_to_string(&key_path)
            .with_context(|| format!("cannot read `{}`", key_path.display()))?;
        let cert_pem = fs::read_to_string(&cert_path)
            .with_context(|| format!("cannot read `{}`", cert_path.display()))?;
        let key = KeyPair::from_pem(&key_pem)
            .with_context(|| format!("`{}` is not a private key", key_path.display()))?;
        return Issuer::from_ca_cert_pem(&cert_pem, key)
            .with_context(|| format!("`{}` is not a CA certificate", cert_path.display()));
    }
    let mut params =
        CertificateParams::new(Vec::<String>::new()).context("cannot describe the CA")?;
    params.distinguished_name = name("kk cluster CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let key = KeyPair::generate().context("cannot generate the CA key")?;
    let cert = params.self_signed(&key).context("cannot sign the CA")?;
    write(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    write(&cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok(Issuer::new(params, key))
}

fn write(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in `{}`", dir.display()))?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))?;
    temp.write_all(bytes)?;
    temp.persist(path)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}
