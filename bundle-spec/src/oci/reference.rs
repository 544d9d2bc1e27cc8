//! Image references split into their parts, the one place kk does it by hand.
//!
//! A reference in a bundle is fully qualified (`docker.io/library/busybox:1.36`): the manifest
//! parser normalises what a user writes (`busybox:1.36`) with `oci_spec`'s `Reference` before
//! anything is locked or named, so this split never normalises: it only cuts the text it is
//! given, and borrows it.

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
    use super::ReferenceParts;

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
