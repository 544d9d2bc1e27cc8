//! Image references split into their parts, the one place kk does it by hand.
//!
//! A reference in a bundle is fully qualified (`docker.io/library/busybox:1.36`): the manifest
//! parser normalises what a user writes (`busybox:1.36`) with `oci_spec`'s `Reference` before
//! anything is locked or named, so this split never normalises: it only cuts the text it is
//! given, and borrows it.
//!
//! [`parse_reference`] is that normalising parse. `oci_spec` matches every reference against
//! one regular expression whose tag part repeats a Unicode word class 128 times; compiling it
//! took 85 ms of every build's start, more than resolving most images. References of the
//! plain form nearly every manifest uses (ASCII names, a tag or a sha256 digest) are therefore
//! recognised here first and built with `Reference`'s own constructors; anything else, every
//! malformed reference included, goes to `oci_spec`'s parser, which stays the judge. A test
//! holds the two to the same answer over thousands of generated references.

use oci_spec::distribution::{ParseError, Reference};

/// Where a reference without a registry lives, as `oci_spec` normalises it.
const DOCKER_HUB: &str = "docker.io";
/// Docker Hub's legacy name, normalised to [`DOCKER_HUB`].
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
/// The longest repository `oci_spec` accepts.
const REPOSITORY_MAX: usize = 255;
/// The longest tag the reference grammar allows.
const TAG_MAX: usize = 128;

/// Parses `text` as `oci_spec`'s `Reference` parser does, to the same `Reference` or error.
pub fn parse_reference(text: &str) -> Result<Reference, ParseError> {
    plain_reference(text).map_or_else(|| text.parse(), Ok)
}

/// `text` as a `Reference`, if it is of the plain form: a registry (`host[:port]`, told apart
/// from a path component as the grammar does, by a `.`, a `:` or being `localhost`), path
/// components of lowercase letters and digits joined by `.`, `_`, `__` or dashes, and an ASCII
/// tag, a lowercase sha256 digest, both, or neither (`latest`, as `oci_spec` fills in). `None`
/// for anything else, which the caller leaves to `oci_spec`.
fn plain_reference(text: &str) -> Option<Reference> {
    let parts = ReferenceParts::split(text);
    if !parts.tag.is_none_or(is_plain_tag) || !parts.digest.is_none_or(is_plain_digest) {
        return None;
    }
    let (registry, repository) = match parts.registry {
        Some(host) if host.contains(['.', ':']) || host == "localhost" => {
            (is_plain_host(host).then_some(host)?, parts.path)
        }
        _ => (DOCKER_HUB, parts.repository),
    };
    if !repository.split('/').all(is_plain_component) {
        return None;
    }
    let registry = if registry == DOCKER_HUB_LEGACY {
        DOCKER_HUB
    } else {
        registry
    };
    let repository = if registry == DOCKER_HUB && !repository.contains('/') {
        format!("library/{repository}")
    } else {
        repository.to_owned()
    };
    if repository.len() > REPOSITORY_MAX {
        return None;
    }
    let (registry, tag) = (registry.to_owned(), parts.tag.map(str::to_owned));
    Some(match (tag, parts.digest.map(str::to_owned)) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag, digest)
        }
        (Some(tag), None) => Reference::with_tag(registry, repository, tag),
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest),
        (None, None) => Reference::with_tag(registry, repository, "latest".to_owned()),
    })
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn is_plain_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    (1..=TAG_MAX).contains(&bytes.len())
        && word(bytes[0])
        && bytes[1..]
            .iter()
            .all(|&b| word(b) || b == b'.' || b == b'-')
}

/// `sha256:` and 64 lowercase hex digits.
fn is_plain_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Dot-separated labels of ASCII letters, digits and inner dashes, then an optional `:port`.
fn is_plain_host(host: &str) -> bool {
    let (name, port) = match host.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let label = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric()
            && bytes
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
    };
    name.split('.').all(label)
        && port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or one or more `-`.
fn is_plain_component(component: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    if !bytes.first().is_some_and(alnum) || !bytes.last().is_some_and(alnum) {
        return false;
    }
    bytes.split(alnum).all(|separator| {
        matches!(separator, b"" | b"." | b"_" | b"__") || separator.iter().all(|&b| b == b'-')
    })
}

/// The parts of `registry/path[:tag][@digest]`, as slices of the reference's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceParts<'a> {
    /// What comes before the first `/`, with its port if any (`registry.local:5000`); `None`
    /// when the name has no `/` at all.
    pub registry: Option<&'a str>,
    /// The repository path on that registry (`library/busybox`).
    pub path: &'a str,
    /// Registry and path together: the reference without its tag and digest.
    pub repository: &'a str,
    /// The tag, if the reference has one (may be empty in a malformed reference).
    pub tag: Option<&'a str>,
    /// The digest text after the first `@`, if any (not validated here).
    pub digest: Option<&'a str>,
}

impl<'a> ReferenceParts<'a> {
    /// Splits `text`. A `:` is the tag's only in the last path component: one before the last
    /// `/` is the registry's port (`registry.local:5000/app`).
    pub fn split(text: &'a str) -> Self {
        let (named, digest) = match text.split_once('@') {
            Some((named, digest)) => (named, Some(digest)),
            None => (text, None),
        };
        let last_component = named.rfind('/').map_or(0, |slash| slash + 1);
        let (repository, tag) = match named[last_component..].rfind(':') {
            Some(colon) => (
                &named[..last_component + colon],
                Some(&named[last_component + colon + 1..]),
            ),
            None => (named, None),
        };
        let (registry, path) = match repository.split_once('/') {
            Some((registry, path)) => (Some(registry), path),
            None => (None, repository),
        };
        Self {
            registry,
            path,
            repository,
            tag,
            digest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ParseError, Reference, ReferenceParts, parse_reference, plain_reference};
    use proptest::prelude::*;

    /// References of the plain form: each is built without `oci_spec`'s regular expression and
    /// comes out as `oci_spec` parses it.
    #[test]
    fn plain_references_are_parsed_as_oci_spec_parses_them() {
        let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
        let plain = [
            "busybox:1.36".to_owned(),
            "library/busybox:1.36".to_owned(),
            "docker.io/busybox:1.36".to_owned(),
            "index.docker.io/library/busybox:1.36".to_owned(),
            "quay.io/coreos/etcd:v3.5.16".to_owned(),
            "registry.k8s.io/kube-apiserver:v1.32.0".to_owned(),
            "Registry.Local:5000/a__b/c--d.e_f:V_1.0-rc.1".to_owned(),
            "localhost/app:1".to_owned(),
            "127.0.0.1:46651/bench/big-1:1".to_owned(),
            "registry.local:5000/app".to_owned(),
            format!("ghcr.io/x/y@{digest}"),
            format!("busybox:1.36@{digest}"),
            format!("busybox@{digest}"),
        ];
        for text in &plain {
            let fast = plain_reference(text).unwrap_or_else(|| panic!("`{text}` is plain"));
            assert_eq!(Ok(fast), text.parse(), "{text}");
        }
    }

    /// Pieces that references are put together from below: valid and invalid parts of each
    /// kind, so most strings are near misses of the grammar.
    const PIECES: &[&str] = &[
        "a",
        "b0",
        "Z",
        "x-y",
        ".",
        "_",
        "__",
        "-",
        "--",
        "/",
        "/",
        "/",
        ":",
        ":",
        "@",
        "1",
        "5000",
        "localhost",
        "docker.io",
        "index.docker.io",
        "library",
        "v1.2",
        "é",
        " ",
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "sha512:0123456789abcdef0123456789abcdef",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Whatever the text, the fast path either declines it or agrees with `oci_spec`, and
        /// `parse_reference` always gives `oci_spec`'s answer.
        #[test]
        fn the_fast_path_never_disagrees_with_oci_spec(
            pieces in prop::collection::vec(prop::sample::select(PIECES), 1..9)
        ) {
            let text = pieces.concat();
            let expected: Result<Reference, ParseError> = text.parse();
            if let Some(fast) = plain_reference(&text) {
                prop_assert_eq!(Some(&fast), expected.as_ref().ok(), "{}", text);
            }
            prop_assert_eq!(parse_reference(&text), expected, "{}", text);
        }
    }

    #[test]
    fn references_split_into_their_parts() {
        // (text, registry, path, tag, digest)
        type Row<'a> = (
            &'a str,
            Option<&'a str>,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
        );
        let table: &[Row<'_>] = &[
            (
                "docker.io/library/busybox:1.36",
                Some("docker.io"),
                "library/busybox",
                Some("1.36"),
                None,
            ),
            (
                "quay.io/x/app@sha256:abc",
                Some("quay.io"),
                "x/app",
                None,
                Some("sha256:abc"),
            ),
            (
                "quay.io/x/app:v1@sha256:abc",
                Some("quay.io"),
                "x/app",
                Some("v1"),
                Some("sha256:abc"),
            ),
            (
                "registry.local:5000/app:1",
                Some("registry.local:5000"),
                "app",
                Some("1"),
                None,
            ),
            (
                "registry.local:5000/app",
                Some("registry.local:5000"),
                "app",
                None,
                None,
            ),
            (
                "kk.internal/binaries/etcd:v3.5.16",
                Some("kk.internal"),
                "binaries/etcd",
                Some("v3.5.16"),
                None,
            ),
            (
                "localhost:5000/app",
                Some("localhost:5000"),
                "app",
                None,
                None,
            ),
            ("busybox:1", None, "busybox", Some("1"), None),
            ("busybox", None, "busybox", None, None),
            ("docker.io/x:", Some("docker.io"), "x", Some(""), None),
            ("/x:1", Some(""), "x", Some("1"), None),
            ("", None, "", None, None),
        ];
        for &(text, registry, path, tag, digest) in table {
            let parts = ReferenceParts::split(text);
            assert_eq!(parts.registry, registry, "{text}");
            assert_eq!(parts.path, path, "{text}");
            assert_eq!(parts.tag, tag, "{text}");
            assert_eq!(parts.digest, digest, "{text}");
            let expected_repository = match registry {
                Some(registry) => format!("{registry}/{path}"),
                None => path.to_owned(),
            };
            assert_eq!(parts.repository, expected_repository, "{text}");
        }
    }
}
