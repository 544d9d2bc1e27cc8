//! Target platforms: `os/arch[/variant]`, normalised the way containerd does it.
//!
//! A [`Platform`] is always stored in normal form, so equality *is* the containerd match rule
//! and [`Platform::matches`] only has to compare. Normalisation follows containerd's
//! `platforms.Normalize`: lowercase everything, map common aliases (`x86_64` → `amd64`,
//! `aarch64` → `arm64`, `armhf` → `arm/v7`, `macos` → `darwin`, …), drop the variants that add
//! nothing (`arm64/v8`, `amd64/v1`) and make the implicit ones explicit (plain `arm` is `arm/v7`).
//! The result is that the `linux/arm64` a user writes selects the `arm64/v8` entry many image
//! indexes carry, and vice versa.
//!
//! Parsing from text ([`FromStr`]) is strict about the operating system and architecture: they
//! must be Go's `GOOS`/`GOARCH` names (or an alias of one), because a typo such as `linux/amd46`
//! would otherwise only surface as "no matching platform" deep inside a build. Platforms read
//! from an OCI image index ([`Platform::from_oci`]) are taken as they are, only normalised:
//! upstream indexes legitimately carry entries we do not know, and they merely fail to match.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diagnostics::cut;
use crate::diagnostics::suggest::{Hint, closest};

/// Go's `GOOS` values (`go tool dist list`), the names OCI image indexes use.
const KNOWN_OS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// Go's `GOARCH` values, the names OCI image indexes use.
const KNOWN_ARCHITECTURES: &[&str] = &[
    "386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64",
    "ppc64le", "riscv64", "s390x", "wasm",
];

/// A target platform in normal form: operating system, CPU architecture and optional variant.
///
/// Displays and (de)serialises as `os/arch[/variant]`, e.g. `linux/amd64` or `linux/arm/v6`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Platform {
    os: String,
    architecture: String,
    variant: Option<String>,
}

impl Platform {
    /// `linux/amd64`, the platform a manifest targets when it lists none.
    pub fn linux_amd64() -> Self {
        Self {
            os: "linux".to_owned(),
            architecture: "amd64".to_owned(),
            variant: None,
        }
    }

    /// Builds a platform from an OCI image index entry, normalising it but accepting names that
    /// are not Go's (an upstream index may list anything; such entries simply never match).
    pub fn from_oci(platform: &oci_spec::image::Platform) -> Self {
        let variant = platform.variant().as_deref().unwrap_or_default();
        Self::normalized(
            &platform.os().to_string(),
            &platform.architecture().to_string(),
            variant,
        )
    }

    /// The operating system, e.g. `linux`.
    pub fn os(&self) -> &str {
        &self.os
    }

    /// The CPU architecture in Go's spelling, e.g. `amd64`, `arm64`.
    pub fn architecture(&self) -> &str {
        &self.architecture
    }

    /// The CPU variant, e.g. `v7` for `arm`; `None` where the architecture needs none.
    pub fn variant(&self) -> Option<&str> {
        self.variant.as_deref()
    }

    /// Whether an image-index entry for `other` can serve this platform, using containerd's
    /// default rule: equal after normalisation (so `linux/arm64` matches `linux/arm64/v8`, and
    /// `linux/arm` matches `linux/arm/v7` but not `linux/arm/v6`).
    pub fn matches(&self, other: &Platform) -> bool {
        self == other
    }

    /// [`Platform::matches`] against an entry of an OCI image index.
    pub fn matches_oci(&self, other: &oci_spec::image::Platform) -> bool {
        self.matches(&Self::from_oci(other))
    }

    fn normalized(os: &str, architecture: &str, variant: &str) -> Self {
        let (architecture, variant) = normalize_arch(architecture, variant);
        Self {
            os: normalize_os(os),
            architecture,
            variant: (!variant.is_empty()).then_some(variant),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        match &self.variant {
            Some(variant) => write!(f, "/{variant}"),
            None => Ok(()),
        }
    }
}

impl FromStr for Platform {
    type Err = PlatformError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || PlatformError::Malformed {
            value: text.to_owned(),
        };
        let mut parts = text.split('/');
        let (Some(os), Some(architecture)) = (parts.next(), parts.next()) else {
            return Err(malformed());
        };
        let variant = parts.next().unwrap_or_default();
        // A trailing `/` would otherwise slip through as an empty (absent) variant.
        if parts.next().is_some() || os.is_empty() || architecture.is_empty() || text.ends_with('/')
        {
            return Err(malformed());
        }
        let platform = Self::normalized(os, architecture, variant);
        check_known(&platform)?;
        Ok(platform)
    }
}

impl Serialize for Platform {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Normalises a bare architecture name (`x86_64` → `amd64`) and checks it is one of Go's.
///
/// Used for the architecture keys of a binary's `sha256` map, which name an architecture
/// without a platform around it.
pub(crate) fn parse_architecture(text: &str) -> Result<String, PlatformError> {
    let (architecture, _) = normalize_arch(text, "");
    check_architecture(&architecture)?;
    Ok(architecture)
}

fn check_known(platform: &Platform) -> Result<(), PlatformError> {
    if !KNOWN_OS.contains(&platform.os.as_str()) {
        return Err(PlatformError::UnknownOs {
            suggestion: closest(&platform.os, KNOWN_OS),
            os: platform.os.clone(),
        });
    }
    check_architecture(&platform.architecture)?;
    let variant_ok = platform.variant.as_deref().is_none_or(|variant| {
        variant
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.')
    });
    if variant_ok {
        Ok(())
    } else {
        Err(PlatformError::InvalidVariant {
            variant: platform.variant.clone().unwrap_or_default(),
        })
    }
}

fn check_architecture(architecture: &str) -> Result<(), PlatformError> {
    if KNOWN_ARCHITECTURES.contains(&architecture) {
        return Ok(());
    }
    Err(PlatformError::UnknownArchitecture {
        suggestion: closest(architecture, KNOWN_ARCHITECTURES),
        architecture: architecture.to_owned(),
    })
}

/// containerd's `normalizeOS`.
fn normalize_os(os: &str) -> String {
    let os = os.to_ascii_lowercase();
    if os == "macos" {
        "darwin".to_owned()
    } else {
        os
    }
}

/// containerd's `normalizeArch`: aliases to Go names, and the variant each implies.
fn normalize_arch(architecture: &str, variant: &str) -> (String, String) {
    let architecture = architecture.to_ascii_lowercase();
    let variant = variant.to_ascii_lowercase();
    let (architecture, variant) = match (architecture.as_str(), variant.as_str()) {
        ("i386", _) => ("386", ""),
        ("x86_64" | "x86-64" | "amd64", "v1") => ("amd64", ""),
        ("x86_64" | "x86-64" | "amd64", variant) => ("amd64", variant),
        ("aarch64" | "arm64", "8" | "v8" | "v8.0") => ("arm64", ""),
        ("aarch64" | "arm64", "9" | "9.0" | "v9.0") => ("arm64", "v9"),
        ("aarch64" | "arm64", variant) => ("arm64", variant),
        ("armhf", _) | ("arm", "" | "7") => ("arm", "v7"),
        ("armel", _) | ("arm", "6") => ("arm", "v6"),
        ("arm", "5") => ("arm", "v5"),
        ("arm", "8") => ("arm", "v8"),
        (architecture, variant) => (architecture, variant),
    };
    (architecture.to_owned(), variant.to_owned())
}

/// A platform string that is not `os/arch[/variant]` with Go's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlatformError {
    /// Not two or three `/`-separated, non-empty parts.
    #[error(
        "platform `{value}` is not `os/arch[/variant]`; hint: e.g. `linux/amd64`, `linux/arm/v7`", value = cut(.value))]
    Malformed {
        /// The text given.
        value: String,
    },
    /// The operating system is not one of Go's `GOOS` names.
    #[error(
        "unknown operating system `{os}`{}",
        Hint::or_example(*.suggestion, "linux"), os = cut(.os))]
    UnknownOs {
        /// The operating system, normalised.
        os: String,
        /// The known name closest to it, if one is close.
        suggestion: Option<&'static str>,
    },
    /// The architecture is not one of Go's `GOARCH` names or a known alias.
    #[error(
        "unknown architecture `{architecture}`{}",
        Hint::or_example(*.suggestion, "amd64"), architecture = cut(.architecture))]
    UnknownArchitecture {
        /// The architecture, normalised.
        architecture: String,
        /// The known name closest to it, if one is close.
        suggestion: Option<&'static str>,
    },
    /// The variant has characters other than letters, digits and `.`.
    #[error("invalid cpu variant `{variant}`; hint: e.g. `v7`, `v8`", variant = cut(.variant))]
    InvalidVariant {
        /// The variant, normalised.
        variant: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Platform {
        text.parse().expect("valid platform")
    }

    #[test]
    fn normalizes_like_containerd() {
        let cases = [
            ("linux/amd64", "linux/amd64"),
            ("Linux/X86_64", "linux/amd64"),
            ("linux/x86-64/v1", "linux/amd64"),
            ("linux/amd64/v3", "linux/amd64/v3"),
            ("linux/aarch64", "linux/arm64"),
            ("linux/arm64/v8", "linux/arm64"),
            ("linux/arm64/8", "linux/arm64"),
            ("linux/arm64/9.0", "linux/arm64/v9"),
            ("linux/arm", "linux/arm/v7"),
            ("linux/arm/7", "linux/arm/v7"),
            ("linux/arm/6", "linux/arm/v6"),
            ("linux/armhf", "linux/arm/v7"),
            ("linux/armel", "linux/arm/v6"),
            ("linux/i386", "linux/386"),
            ("macos/arm64", "darwin/arm64"),
            ("windows/amd64", "windows/amd64"),
        ];
        for (input, expected) in cases {
            assert_eq!(parse(input).to_string(), expected, "{input}");
        }
    }

    #[test]
    fn accessors_expose_normal_form() {
        let platform = parse("linux/armhf");
        assert_eq!(
            (platform.os(), platform.architecture(), platform.variant()),
            ("linux", "arm", Some("v7"))
        );
        assert_eq!(parse("linux/arm64/v8").variant(), None);
    }

    #[test]
    fn matches_index_entries_the_containerd_way() {
        let entry = |arch: &str, variant: Option<&str>| {
            let builder = oci_spec::image::PlatformBuilder::default()
                .os("linux")
                .architecture(arch);
            match variant {
                Some(variant) => builder.variant(variant),
                None => builder,
            }
            .build()
            .expect("platform")
        };
        assert!(parse("linux/arm64").matches_oci(&entry("arm64", Some("v8"))));
        assert!(parse("linux/arm64/v8").matches_oci(&entry("arm64", None)));
        assert!(parse("linux/arm").matches_oci(&entry("arm", Some("v7"))));
        assert!(parse("linux/arm/v7").matches_oci(&entry("arm", None)));
        assert!(!parse("linux/arm").matches_oci(&entry("arm", Some("v6"))));
        assert!(!parse("linux/amd64").matches_oci(&entry("arm64", None)));
        assert!(!parse("linux/amd64").matches_oci(&entry("amd64", Some("v3"))));
        assert!(parse("linux/amd64").matches(&parse("linux/x86_64")));
    }

    #[test]
    fn from_oci_accepts_unknown_names() {
        let entry = oci_spec::image::PlatformBuilder::default()
            .os("unknown")
            .architecture("unknown")
            .build()
            .expect("platform");
        assert_eq!(Platform::from_oci(&entry).to_string(), "unknown/unknown");
    }

    #[test]
    fn rejects_bad_text() {
        let cases = [
            ("linux", "is not `os/arch[/variant]`"),
            ("linux/", "is not `os/arch[/variant]`"),
            ("/amd64", "is not `os/arch[/variant]`"),
            ("linux/arm/v7/", "is not `os/arch[/variant]`"),
            ("linux/arm/v7/x", "is not `os/arch[/variant]`"),
            (
                "linx/amd64",
                "unknown operating system `linx`; did you mean `linux`?",
            ),
            (
                "linux/amd46",
                "unknown architecture `amd46`; did you mean `amd64`?",
            ),
            ("linux/zz80", "unknown architecture `zz80`; hint:"),
            ("linux/arm/v 7", "invalid cpu variant `v 7`"),
        ];
        for (input, fragment) in cases {
            let error = input.parse::<Platform>().expect_err(input).to_string();
            assert!(error.contains(fragment), "{input}: {error}");
        }
    }

    #[test]
    fn bare_architectures_normalize() {
        assert_eq!(parse_architecture("x86_64").expect("alias"), "amd64");
        assert_eq!(parse_architecture("arm64").expect("name"), "arm64");
        assert!(parse_architecture("amd46").is_err());
    }

    #[test]
    fn serde_uses_the_string_form() {
        let platform = parse("linux/aarch64");
        let json = serde_json::to_string(&platform).expect("serialize");
        assert_eq!(json, "\"linux/arm64\"");
        let back: Platform = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, platform);
        assert!(serde_json::from_str::<Platform>("\"linux\"").is_err());
    }
}
