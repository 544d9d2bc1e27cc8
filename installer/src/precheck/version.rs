//! Versions as programs print them (`Kubernetes v1.31.4`, `containerd … 1.6.20~ds1 …`,
//! `6.1.0-18-amd64`): the first `[v]MAJOR.MINOR[.PATCH]` token, read up to its first
//! character that is neither a digit nor a dot.

use std::fmt;

use bundle_spec::manifest::KubernetesVersion;

/// `MAJOR.MINOR.PATCH`, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Version {
    pub(super) major: u32,
    pub(super) minor: u32,
    pub(super) patch: u32,
}

impl Version {
    pub(super) const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// The first version in `text`, if any.
    pub(super) fn find(text: &str) -> Option<Self> {
        text.split_whitespace().find_map(Self::token)
    }

    /// One token: `v1.31.4`, `1.6.20~ds1`, `6.1.0-18-amd64`, `5.10`.
    fn token(token: &str) -> Option<Self> {
        let token = token.strip_prefix('v').unwrap_or(token);
        let end = token
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(token.len());
        let mut numbers = token[..end]
            .split('.')
            .take(3)
            .map(|part| part.parse::<u32>().ok());
        let major = numbers.next()??;
        let minor = numbers.next()??;
        let patch = numbers.next().map_or(Some(0), |patch| patch)?;
        Some(Self::new(major, minor, patch))
    }
}

impl From<KubernetesVersion> for Version {
    fn from(v: KubernetesVersion) -> Self {
        Self::new(v.major, v.minor, v.patch)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_versions_as_programs_print_them() {
        let table = [
            ("Kubernetes v1.31.4", Some(Version::new(1, 31, 4))),
            ("v1.30.0", Some(Version::new(1, 30, 0))),
            (
                "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1",
                Some(Version::new(1, 6, 20)),
            ),
            (
                "containerd containerd.io 1.7.13 7c3aca7",
                Some(Version::new(1, 7, 13)),
            ),
            ("etcd Version: 3.4.23", Some(Version::new(3, 4, 23))),
            ("6.1.0-18-amd64", Some(Version::new(6, 1, 0))),
            ("5.14.0-362.el9.x86_64", Some(Version::new(5, 14, 0))),
            ("4.19", Some(Version::new(4, 19, 0))),
            ("", None),
            ("command not found", None),
            ("5", None),
        ];
        for (text, expected) in table {
            assert_eq!(Version::find(text), expected, "{text}");
        }
    }
}
