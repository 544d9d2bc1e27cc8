//! `certs check`'s rows: every certificate read from a node, with its subject and expiry, and
//! how they print.
//!
//! A node's certificates arrive as one text (see [`DUMP`]): each file after a `==> PATH` line.
//! A `.crt` file is PEM; a kubeconfig holds its client certificate base64-encoded in
//! `client-certificate-data` (kubeadm's kubeconfigs embed it; one that points at a file, as
//! `kubelet.conf` does at the kubelet's rotating certificate, has no row).

use std::fmt::Write as _;

use base64::Engine as _;
use serde::Serialize;
use x509_parser::certificate::X509Certificate;

use super::CertsError;

/// Certificates with fewer days left than this are marked (kubeadm's `certs check-expiration`
/// warns at 30 days too).
pub const LEAF_WARN_DAYS: i64 = 30;
/// CAs with fewer days left than this are marked: rotating a CA takes a plan, not a command.
pub const CA_WARN_DAYS: i64 = 365;

/// The shell command that prints every certificate kk and kubeadm made on a node: kubeadm's
/// tree and kk's under their PKI directories, then kubeadm's kubeconfigs.
pub const DUMP: &str = "for f in $(find /etc/kubernetes/pki /etc/kk/pki -name '*.crt' -type f 2>/dev/null | sort) \
    /etc/kubernetes/admin.conf /etc/kubernetes/super-admin.conf \
    /etc/kubernetes/controller-manager.conf /etc/kubernetes/scheduler.conf; do \
    [ -f \"$f\" ] && { echo \"==> $f\"; cat \"$f\"; echo; }; done; true";

/// One certificate on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertRow {
    /// The node, by inventory name.
    pub node: String,
    /// The file on the node.
    pub path: String,
    /// The subject, as `O=..., CN=...`.
    pub subject: String,
    /// Whether it is a CA.
    pub ca: bool,
    /// Its `notAfter`, seconds since the epoch.
    pub not_after: i64,
    /// Whole days from now to `notAfter` (negative once expired).
    pub days_left: i64,
    /// `expired`, `expiring` (fewer days left than the warning threshold) or `ok`.
    pub status: Status,
}

/// How close a certificate is to its expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Valid, with time to spare.
    Ok,
    /// Fewer days left than [`LEAF_WARN_DAYS`] ([`CA_WARN_DAYS`] for a CA).
    Expiring,
    /// Past its `notAfter`.
    Expired,
}

/// The rows of one node's [`DUMP`] output, at time `now` (seconds since the epoch).
pub fn rows(node: &str, dump: &str, now: i64) -> Result<Vec<CertRow>, CertsError> {
    let mut rows = Vec::new();
    for (path, body) in files(dump) {
        let kubeconfig = std::path::Path::new(path)
            .extension()
            .is_some_and(|extension| extension == "conf");
        let der = if kubeconfig {
            match kubeconfig_cert(body) {
                Some(pem) => pem_der(node, path, pem.as_bytes())?,
                None => continue,
            }
        } else {
            pem_der(node, path, body.as_bytes())?
        };
        let (_, x509) =
            x509_parser::parse_x509_certificate(&der).map_err(|e| CertsError::Parse {
                node: node.to_owned(),
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        rows.push(row(node, path, &x509, now));
    }
    Ok(rows)
}

/// The files of a dump: `(path, contents)`, each file's contents running to the next line that
/// starts with `==> ` (possibly none: a file listed by name only).
pub(super) fn files(dump: &str) -> Vec<(&str, &str)> {
    let mut files = Vec::new();
    let mut current: Option<(&str, usize)> = None;
    let mut offset = 0;
    for line in dump.split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("==> ") {
            if let Some((previous, start)) = current.take() {
                files.push((previous, &dump[start..offset]));
            }
            current = Some((path.trim(), offset + line.len()));
        }
        offset += line.len();
    }
    if let Some((last, start)) = current {
        files.push((last, &dump[start..]));
    }
    files
}

/// The PEM of a kubeconfig's embedded client certificate, if it has one.
fn kubeconfig_cert(text: &str) -> Option<String> {
    let value = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("client-certificate-data:"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.trim().trim_matches('"'))
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn pem_der(node: &str, path: &str, pem: &[u8]) -> Result<Vec<u8>, CertsError> {
    x509_parser::pem::parse_x509_pem(pem)
        .map(|(_, pem)| pem.contents)
        .map_err(|e| CertsError::Parse {
            node: node.to_owned(),
            path: path.to_owned(),
            reason: e.to_string(),
        })
}

fn row(node: &str, path: &str, x509: &X509Certificate<'_>, now: i64) -> CertRow {
    let not_after = x509.validity().not_after.timestamp();
    let ca = x509.is_ca();
    let days_left = (not_after - now).div_euclid(86_400);
    let warn = if ca { CA_WARN_DAYS } else { LEAF_WARN_DAYS };
    let status = if not_after <= now {
        Status::Expired
    } else if days_left < warn {
        Status::Expiring
    } else {
        Status::Ok
    };
    CertRow {
        node: node.to_owned(),
        path: path.to_owned(),
        subject: x509.subject().to_string(),
        ca,
        not_after,
        days_left,
        status,
    }
}

/// The table `certs check` prints: one line per certificate, by node and path, expired and
/// expiring ones marked.
pub fn render(rows: &[CertRow]) -> String {
    let mut rows: Vec<&CertRow> = rows.iter().collect();
    rows.sort_by(|a, b| (&a.node, &a.path).cmp(&(&b.node, &b.path)));
    let expiry = |row: &CertRow| {
        jiff::Timestamp::from_second(row.not_after).map_or_else(
            |_| row.not_after.to_string(),
            |t| t.strftime("%Y-%m-%d %H:%M").to_string(),
        )
    };
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let mark = match (row.status, row.ca) {
                (Status::Ok, _) => "",
                (Status::Expired, _) => "EXPIRED",
                (Status::Expiring, false) => "expiring: renew",
                (Status::Expiring, true) => "CA expiring: rotate",
            };
            [
                row.node.clone(),
                row.path.clone(),
                row.subject.clone(),
                expiry(row),
                row.days_left.to_string(),
                mark.to_owned(),
            ]
        })
        .collect();
    let header = ["NODE", "PATH", "SUBJECT", "EXPIRES (UTC)", "DAYS", ""].map(str::to_owned);
    let mut widths = [0; 6];
    for line in std::iter::once(&header).chain(&cells) {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for line in std::iter::once(&header).chain(&cells) {
        let mut out = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i == 4 {
                let _ = write!(out, "{cell:>width$}  ");
            } else {
                let _ = write!(out, "{cell:<width$}  ");
            }
        }
        let _ = writeln!(text, "{}", out.trim_end());
    }
    text
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
