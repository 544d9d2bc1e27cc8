//! Repository names: how a bundle's ref names become registry repository names.
//!
//! See the module documentation of [`crate::registry`] for the rules and why they hold.

use bundle_spec::oci::ReferenceParts;

/// Splits a fully qualified ref name from `index.json` (`docker.io/library/busybox:1.36`,
/// `quay.io/x/app@sha256:…`, `registry.local:5000/app:1`) into its source registry host and
/// its parts. `None` when it has no host part, no path, or neither tag nor digest.
pub(crate) fn parse_ref_name(text: &str) -> Option<(&str, ReferenceParts<'_>)> {
    let parts = ReferenceParts::split(text);
    let host = parts.registry.filter(|host| !host.is_empty())?;
    let named = parts.tag.is_some() || parts.digest.is_some();
    (!parts.path.is_empty() && named).then_some((host, parts))
}

/// The first component of the repository name for a source `host` (`host[:port]`): the host
/// in lowercase, with the `:` before the port replaced by `_`. `None` if `host` is not a
/// host name or IPv4 address with an optional numeric port.
///
/// Host names never contain `_` (DNS labels are letters, digits and `-`), so the `_` marks
/// the port unambiguously and the mapping is injective.
pub(crate) fn host_component(host: &str) -> Option<String> {
    let (name, port) = match host.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let name_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if !name_ok || !port_ok {
        return None;
    }
    let mut component = name.to_ascii_lowercase();
    if let Some(port) = port {
        component.push('_');
        component.push_str(port);
    }
    Some(component)
}

/// The repository name serving `path` from source `host`: `host_component(host)/path`.
/// `None` if the host is not valid or the result is not a valid repository name.
pub(crate) fn repository_name(host: &str, path: &str) -> Option<String> {
    let name = format!("{}/{path}", host_component(host)?);
    is_valid_repository(&name).then_some(name)
}

/// Whether `name` matches the OCI distribution grammar for repository names:
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`.
pub(crate) fn is_valid_repository(name: &str) -> bool {
    !name.is_empty() && name.split('/').all(is_valid_component)
}

/// One `/`-separated component of a repository name.
fn is_valid_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if !alnum(first) || !alnum(last) {
        return false;
    }
    // Separators between alphanumeric runs: `.`, `_`, `__` or one or more `-`.
    let mut run: Vec<u8> = Vec::new();
    for &b in bytes {
        if alnum(b) {
            let ok = match run.as_slice() {
                [] | [b'.' | b'_'] | [b'_', b'_'] => true,
                dashes => dashes.iter().all(|&d| d == b'-'),
            };
            if !ok {
                return false;
            }
            run.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            run.push(b);
        } else {
            return false;
        }
    }
    true
}

/// Whether `tag` matches `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
pub(crate) fn is_valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    matches!(bytes.first(), Some(&b) if word(b))
        && bytes.len() <= 128
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::{is_valid_repository, is_valid_tag, parse_ref_name, repository_name};

    #[test]
    fn ref_names_map_to_repositories_and_tags() {
        // (ref name, repository, tag, digest)
        let table: &[(&str, &str, Option<&str>, Option<&str>)] = &[
            (
                "docker.io/library/busybox:1.36",
                "docker.io/library/busybox",
                Some("1.36"),
                None,
            ),
            (
                "quay.io/x/app@sha256:abc",
                "quay.io/x/app",
                None,
                Some("sha256:abc"),
            ),
            (
                "quay.io/x/app:v1@sha256:abc",
                "quay.io/x/app",
                Some("v1"),
                Some("sha256:abc"),
            ),
            (
                "registry.local:5000/app:1",
                "registry.local_5000/app",
                Some("1"),
                None,
            ),
            (
                "localhost:5000/a/b/c:latest",
                "localhost_5000/a/b/c",
                Some("latest"),
                None,
            ),
            (
                "kk.internal/binaries/etcd:v3.5.16",
                "kk.internal/binaries/etcd",
                Some("v3.5.16"),
                None,
            ),
            (
                "kk.internal/charts/x:1",
                "kk.internal/charts/x",
                Some("1"),
                None,
            ),
            (
                "ghcr.io/stefanprodan/charts/podinfo:6.7.0",
                "ghcr.io/stefanprodan/charts/podinfo",
                Some("6.7.0"),
                None,
            ),
            ("Quay.IO/x/app:1", "quay.io/x/app", Some("1"), None),
            (
                "10.0.0.1:443/team/app:2",
                "10.0.0.1_443/team/app",
                Some("2"),
                None,
            ),
        ];
        for &(text, repository, tag, digest) in table {
            let (host, parsed) = parse_ref_name(text).unwrap_or_else(|| panic!("{text} parses"));
            assert_eq!(
                repository_name(host, parsed.path).as_deref(),
                Some(repository),
                "{text}"
            );
            assert_eq!(parsed.tag, tag, "{text}");
            assert_eq!(parsed.digest, digest, "{text}");
        }
    }

    #[test]
    fn bad_ref_names_are_refused() {
        for text in [
            "busybox",
            "busybox:1",
            "docker.io/library/busybox",
            "/x:1",
            "docker.io/:1",
        ] {
            assert_eq!(parse_ref_name(text), None, "{text}");
        }
        for (host, path) in [
            ("under_score.io", "x"),
            ("host:port", "x"),
            ("host:", "x"),
            ("-bad.io", "x"),
            ("a..b", "x"),
            ("docker.io", "Library/busybox"),
            ("docker.io", "a//b"),
            ("docker.io", "../x"),
        ] {
            assert_eq!(repository_name(host, path), None, "{host} {path}");
        }
    }

    #[test]
    fn mapping_is_injective_on_hosts_with_ports() {
        // The two spellings that could collide if `_` were allowed in host names.
        assert_ne!(
            repository_name("a:5000", "x"),
            repository_name("a_5000", "x")
        );
        assert_eq!(repository_name("a_5000", "x"), None);
    }

    #[test]
    fn repository_grammar() {
        for ok in [
            "a",
            "a/b",
            "a.b/c_d/e__f/g-h/i---j",
            "localhost_5000/x",
            "0",
        ] {
            assert!(is_valid_repository(ok), "{ok}");
        }
        for bad in [
            "", "A", "a/", "/a", "a//b", "a/../b", "..", "a/.b", "a_", "a___b", "a._b", "a:b",
            "a%2fb",
        ] {
            assert!(!is_valid_repository(bad), "{bad}");
        }
    }

    #[test]
    fn tag_grammar() {
        for ok in ["1.36", "v3.5.16", "_x", "A-b.c_d"] {
            assert!(is_valid_tag(ok), "{ok}");
        }
        let long = "a".repeat(129);
        for bad in ["", ".x", "-x", "a/b", "a:b", long.as_str()] {
            assert!(!is_valid_tag(bad), "{bad}");
        }
    }
}
