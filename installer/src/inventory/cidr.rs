//! Address ranges: [`Cidr`] (one range) and [`ClusterCidr`] (one, or a dual-stack pair).
//!
//! KubeKey documents a dual-stack `pod_cidr`/`service_cidr` as `ipv4_cidr/ipv6_cidr` or
//! `ipv4_cidr,ipv6_cidr`, but its own precheck only ever splits on `,`. kk reads both: the
//! text is split on `,` first; a single part with more than one `/` (`10.233.64.0/18/fd85::/108`)
//! is the slash form, cut at its second `/` — an address never contains `/`, so the cut is
//! unambiguous. Either family may come first (Kubernetes takes the first as the primary
//! family); the two must differ.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use bundle_spec::diagnostics::cut;

/// An address range `address/prefix` with no host bits set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// KubeKey's default pod range, `10.233.64.0/18` (owned by `bundle_spec::charts`, which
    /// kk-bundle renders the CNI chart with).
    pub const DEFAULT_POD: Self = Self {
        address: bundle_spec::charts::DEFAULT_POD_SUBNET.0,
        prefix: bundle_spec::charts::DEFAULT_POD_SUBNET.1,
    };

    /// KubeKey's default service range, `10.233.0.0/18` (owned by `bundle_spec::charts`, which
    /// kk-bundle renders the CNI chart with).
    pub const DEFAULT_SERVICE: Self = Self {
        address: bundle_spec::charts::DEFAULT_SERVICE_SUBNET.0,
        prefix: bundle_spec::charts::DEFAULT_SERVICE_SUBNET.1,
    };

    /// The network address.
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether this is an IPv4 range.
    pub fn is_ipv4(&self) -> bool {
        self.address.is_ipv4()
    }

    /// Whether `address` is in the range.
    pub fn contains(&self, address: IpAddr) -> bool {
        address.is_ipv4() == self.is_ipv4()
            && bits(address) & mask(self.bit_width(), self.prefix) == bits(self.address)
    }

    /// Whether the two ranges share an address.
    pub fn overlaps(&self, other: &Self) -> bool {
        let (wider, narrower) = if self.prefix <= other.prefix {
            (self, other)
        } else {
            (other, self)
        };
        wider.contains(narrower.address)
    }

    /// 32 or 128.
    pub(super) fn bit_width(&self) -> u8 {
        if self.is_ipv4() { 32 } else { 128 }
    }
}

/// The address as a 128-bit number, IPv4 in the low 32 bits.
fn bits(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The netmask of `prefix` in a `width`-bit address, as [`bits`] lays addresses out.
fn mask(width: u8, prefix: u8) -> u128 {
    let all = if width == 32 {
        u128::from(u32::MAX)
    } else {
        u128::MAX
    };
    let host_bits = u32::from(width - prefix);
    all.checked_shl(host_bits).unwrap_or(0) & all
}

fn from_bits(bits: u128, ipv4: bool) -> IpAddr {
    if ipv4 {
        // The caller masked to 32 bits.
        IpAddr::V4(Ipv4Addr::from(u32::try_from(bits).unwrap_or(u32::MAX)))
    } else {
        IpAddr::V6(bits.into())
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (address_text, prefix_text) =
            text.split_once('/').ok_or_else(|| CidrError::NoPrefix {
                value: text.to_owned(),
            })?;
        let address: IpAddr = address_text.parse().map_err(|_| CidrError::Address {
            value: address_text.to_owned(),
        })?;
        let width = if address.is_ipv4() { 32 } else { 128 };
        let prefix = prefix_text
            .parse::<u8>()
            .ok()
            .filter(|prefix| *prefix <= width && prefix_text.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| CidrError::Prefix {
                prefix: prefix_text.to_owned(),
                max: width,
            })?;
        let network = bits(address) & mask(width, prefix);
        if network != bits(address) {
            let address = from_bits(network, address.is_ipv4());
            return Err(CidrError::HostBits {
                network: Self { address, prefix },
            });
        }
        Ok(Self { address, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// A cluster's pod or service range: one family, or dual stack (one IPv4 and one IPv6 range,
/// the first being the primary family). Displays as kubeadm wants it, `first,second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterCidr {
    primary: Cidr,
    secondary: Option<Cidr>,
}

impl ClusterCidr {
    /// A single-stack range.
    pub const fn single(cidr: Cidr) -> Self {
        Self {
            primary: cidr,
            secondary: None,
        }
    }

    /// The ranges, primary first.
    pub fn ranges(&self) -> impl Iterator<Item = Cidr> {
        std::iter::once(self.primary).chain(self.secondary)
    }

    /// The IPv4 range, if any.
    pub fn ipv4(&self) -> Option<Cidr> {
        self.ranges().find(Cidr::is_ipv4)
    }

    /// The IPv6 range, if any.
    pub fn ipv6(&self) -> Option<Cidr> {
        self.ranges().find(|cidr| !cidr.is_ipv4())
    }

    /// Whether both families are configured.
    pub fn is_dual_stack(&self) -> bool {
        self.secondary.is_some()
    }
}

impl FromStr for ClusterCidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let (first, second) = match parts[..] {
            [""] => return Err(CidrError::Empty),
            [single] if single.matches('/').count() >= 2 => split_slash_form(single),
            [single] => (single, None),
            [first, second] => (first, Some(second)),
            _ => return Err(CidrError::TooManyRanges),
        };
        let primary: Cidr = first.parse()?;
        let secondary = second.map(str::parse::<Cidr>).transpose()?;
        if let Some(secondary) = secondary
            && secondary.is_ipv4() == primary.is_ipv4()
        {
            let family = if primary.is_ipv4() { "IPv4" } else { "IPv6" };
            return Err(CidrError::SameFamily { family });
        }
        Ok(Self { primary, secondary })
    }
}

/// `a/n/b/m` → (`a/n`, `b/m`).
fn split_slash_form(text: &str) -> (&str, Option<&str>) {
    let second_slash = text
        .match_indices('/')
        .nth(1)
        .map_or(text.len(), |(index, _)| index);
    let (first, rest) = text.split_at(second_slash);
    (first, rest.strip_prefix('/'))
}

impl fmt::Display for ClusterCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.primary)?;
        if let Some(secondary) = self.secondary {
            write!(f, ",{secondary}")?;
        }
        Ok(())
    }
}

/// What is wrong with an address range (`cni.pod_cidr`, `cni.service_cidr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// Nothing is written.
    #[error("empty value; hint: write `address/length`, e.g. `10.233.64.0/18`")]
    Empty,
    /// A range without `/`.
    #[error("`{value}` has no prefix length; hint: write `address/length`, e.g. `10.233.64.0/18`", value = cut(.value))]
    NoPrefix {
        /// The range as written.
        value: String,
    },
    /// The part before `/` is not an address.
    #[error("`{value}` is not an IP address", value = cut(.value))]
    Address {
        /// The address as written.
        value: String,
    },
    /// The part after `/` is not a prefix length of the address's family.
    #[error("prefix length `{prefix}` is not a number from 0 to {max}", prefix = cut(.prefix))]
    Prefix {
        /// The prefix as written.
        prefix: String,
        /// 32 or 128.
        max: u8,
    },
    /// The address has bits set beyond the prefix.
    #[error("host bits are set; did you mean `{network}`?")]
    HostBits {
        /// The network the prefix gives.
        network: Cidr,
    },
    /// More than a dual-stack pair.
    #[error(
        "more than two ranges; hint: a dual-stack value is one IPv4 and one IPv6 range, written `v4,v6` or `v4/v6`"
    )]
    TooManyRanges,
    /// A pair of the same family.
    #[error("both ranges are {family}; hint: a dual-stack value is one IPv4 and one IPv6 range")]
    SameFamily {
        /// `IPv4` or `IPv6`.
        family: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Cidr {
        text.parse()
            .unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn cluster_cidrs_read_every_documented_form() {
        let cases = [
            ("10.233.64.0/18", "10.233.64.0/18", false),
            (" 10.233.64.0/18 ", "10.233.64.0/18", false),
            (
                "fd85:ee78:d8a6:8607::1:0/112",
                "fd85:ee78:d8a6:8607::1:0/112",
                false,
            ),
            (
                "10.233.64.0/18,fd85::/108",
                "10.233.64.0/18,fd85::/108",
                true,
            ),
            (
                "10.233.64.0/18, fd85::/108",
                "10.233.64.0/18,fd85::/108",
                true,
            ),
            (
                "10.233.64.0/18/fd85::/108",
                "10.233.64.0/18,fd85::/108",
                true,
            ),
            (
                "fd85::/108/10.233.64.0/18",
                "fd85::/108,10.233.64.0/18",
                true,
            ),
        ];
        for (text, shown, dual) in cases {
            let parsed: ClusterCidr = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(parsed.to_string(), shown, "{text}");
            assert_eq!(parsed.is_dual_stack(), dual, "{text}");
        }
        let dual: ClusterCidr = "fd85::/108,10.233.64.0/18".parse().expect("valid");
        assert_eq!(dual.ipv4(), Some(cidr("10.233.64.0/18")));
        assert_eq!(dual.ipv6(), Some(cidr("fd85::/108")));
    }

    #[test]
    fn bad_cidrs_say_what_is_wrong() {
        let cases = [
            ("", "empty value"),
            ("10.0.0.0", "`10.0.0.0` has no prefix length"),
            ("10.0.0.300/16", "`10.0.0.300` is not an IP address"),
            (
                "10.0.0.0/33",
                "prefix length `33` is not a number from 0 to 32",
            ),
            ("10.0.0.0/+8", "prefix length `+8`"),
            ("fd00::/129", "from 0 to 128"),
            ("10.233.64.1/18", "did you mean `10.233.64.0/18`?"),
            ("10.0.0.0/8,10.1.0.0/16", "both ranges are IPv4"),
            ("fd00::/8/fd01::/16", "both ranges are IPv6"),
            ("10.0.0.0/8,fd00::/8,fd01::/8", "more than two ranges"),
            ("10.0.0.0/8/fd00::", "`fd00::` has no prefix length"),
            ("10.0.0.0/8//", "`` is not an IP address"),
        ];
        for (text, fragment) in cases {
            let error = text.parse::<ClusterCidr>().expect_err(text).to_string();
            assert!(error.contains(fragment), "{text}: {error}");
        }
    }

    #[test]
    fn ranges_contain_and_overlap() {
        let pods = cidr("10.233.64.0/18");
        assert!(pods.contains("10.233.127.255".parse().expect("ip")));
        assert!(!pods.contains("10.233.128.0".parse().expect("ip")));
        assert!(!pods.contains("::1".parse().expect("ip")));
        assert!(pods.overlaps(&cidr("10.0.0.0/8")));
        assert!(cidr("10.0.0.0/8").overlaps(&pods));
        assert!(!pods.overlaps(&Cidr::DEFAULT_SERVICE));
        assert!(!pods.overlaps(&cidr("fd00::/8")));
        assert!(cidr("0.0.0.0/0").contains("192.168.1.1".parse().expect("ip")));
        assert!(cidr("::/0").overlaps(&cidr("fd00::/8")));
    }
}
