//! Kubernetes versions and the rules kubeadm upgrades by (`cmd/kubeadm/app/phases/upgrade/
//! policy.go`): one minor version at a time, never down, and no kubelet newer than the API
//! server it would talk to. A leaf module: the upgrade plan asks it, nothing else.

use std::cmp::Ordering;
use std::fmt;

use super::error::UpgradePlanError;

/// A Kubernetes version `vMAJOR.MINOR.PATCH` (a pre-release suffix is kept for display only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVersion {
    /// The text as given (`v1.31.4`).
    pub text: String,
    /// Major, minor, patch.
    pub numbers: (u64, u64, u64),
}

impl KubeVersion {
    /// `v1.31.4` (or `1.31.4`, or `Kubernetes v1.31.4` as `kubelet --version` prints it).
    pub fn parse(text: &str) -> Result<Self, UpgradePlanError> {
        let trimmed = text.trim();
        let bare = trimmed.rsplit(' ').next().unwrap_or(trimmed);
        let bare = bare.strip_prefix('v').unwrap_or(bare);
        let core = bare.split(['-', '+']).next().unwrap_or(bare);
        let mut parts = core.split('.').map(str::parse::<u64>);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor)), Some(Ok(patch)), None) => Ok(Self {
                text: format!("v{bare}"),
                numbers: (major, minor, patch),
            }),
            _ => Err(UpgradePlanError::Version {
                text: text.to_owned(),
            }),
        }
    }

    /// `(major, minor)`.
    fn minor(&self) -> (u64, u64) {
        (self.numbers.0, self.numbers.1)
    }
}

impl Ord for KubeVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.numbers.cmp(&other.numbers)
    }
}

impl PartialOrd for KubeVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether kubeadm upgrades a cluster at `from` to `to` whose kubelets run `kubelets` (node,
/// version): the refusal kubeadm would make, first found, otherwise `Ok`. The same version
/// again is allowed (a rerun, or a bundle that changes only other components).
pub fn check(
    from: &KubeVersion,
    to: &KubeVersion,
    kubelets: &[(String, KubeVersion)],
) -> Result<(), UpgradePlanError> {
    let versions = || (from.text.clone(), to.text.clone());
    if to < from {
        let (from, to) = versions();
        return Err(UpgradePlanError::Downgrade { from, to });
    }
    if from.numbers.0 != to.numbers.0 || to.numbers.1 > from.numbers.1 + 1 {
        let (from, to) = versions();
        return Err(UpgradePlanError::SkipsMinor { from, to });
    }
    // policy.go: a kubelet of a higher minor than the target control plane is refused.
    if let Some((node, kubelet)) = kubelets.iter().find(|(_, k)| k.minor() > to.minor()) {
        return Err(UpgradePlanError::KubeletNewer {
            node: node.clone(),
            kubelet: kubelet.text.clone(),
            to: to.text.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> KubeVersion {
        KubeVersion::parse(text).expect("version")
    }

    #[test]
    fn versions_parse_as_kubeadm_and_kubelet_print_them() {
        let cases = [
            ("v1.31.4", Some((1, 31, 4))),
            ("1.32.0", Some((1, 32, 0))),
            ("Kubernetes v1.30.2\n", Some((1, 30, 2))),
            ("v1.33.0-rc.1", Some((1, 33, 0))),
            ("v1.31", None),
            ("latest", None),
            ("v1.31.4.1", None),
        ];
        for (text, expected) in cases {
            let parsed = KubeVersion::parse(text).ok().map(|v| v.numbers);
            assert_eq!(parsed, expected, "{text:?}");
        }
        assert_eq!(v("Kubernetes v1.30.2").to_string(), "v1.30.2");
    }

    /// From, to, the kubelets (node, version), the refusal's kind or `None`.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], Option<&'a str>);

    #[test]
    fn kubeadm_upgrades_one_minor_at_a_time_never_down() {
        let cases: [Case<'_>; 10] = [
            ("v1.32.3", "v1.33.1", &[], None),
            ("v1.32.3", "v1.32.7", &[], None),
            ("v1.32.3", "v1.32.3", &[], None),
            (
                "v1.32.3",
                "v1.33.1",
                &[("w1", "v1.32.3"), ("cp1", "v1.33.1")],
                None,
            ),
            ("v1.32.3", "v1.34.0", &[], Some("skips")),
            ("v1.32.3", "v2.32.3", &[], Some("skips")),
            ("v1.33.1", "v1.32.3", &[], Some("downgrade")),
            ("v1.32.7", "v1.32.3", &[], Some("downgrade")),
            ("v1.32.3", "v1.33.1", &[("w1", "v1.34.0")], Some("kubelet")),
            ("v1.32.3", "v1.32.4", &[("w1", "v1.33.0")], Some("kubelet")),
        ];
        for (from, to, kubelets, refusal) in cases {
            let kubelets: Vec<(String, KubeVersion)> = kubelets
                .iter()
                .map(|(node, version)| ((*node).to_owned(), v(version)))
                .collect();
            let kind = match check(&v(from), &v(to), &kubelets) {
                Ok(()) => None,
                Err(UpgradePlanError::SkipsMinor { .. }) => Some("skips"),
                Err(UpgradePlanError::Downgrade { .. }) => Some("downgrade"),
                Err(UpgradePlanError::KubeletNewer { .. }) => Some("kubelet"),
                Err(other) => panic!("{from} -> {to}: {other}"),
            };
            assert_eq!(kind, refusal, "{from} -> {to} with {kubelets:?}");
        }
    }

    #[test]
    fn a_refusal_names_both_versions_and_ends_with_a_hint() {
        for (from, to) in [("v1.32.3", "v1.34.0"), ("v1.33.1", "v1.32.3")] {
            let message = check(&v(from), &v(to), &[])
                .expect_err("refused")
                .to_string();
            assert!(message.contains(from) && message.contains(to), "{message}");
            assert!(message.contains("; hint: "), "{message}");
        }
        let message = check(&v("v1.32.3"), &v("v1.32.4"), &[("w1".into(), v("v1.33.0"))])
            .expect_err("kubelet")
            .to_string();
        assert!(
            message.contains("`w1`") && message.contains("v1.33.0") && message.contains("v1.32.4"),
            "{message}"
        );
    }
}
