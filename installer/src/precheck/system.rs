//! kubeadm's `SystemVerification` preflight by Kubernetes release: which kernels and which
//! cgroup version the kubeadm and kubelet of a release accept, warn about or refuse.
//!
//! kubeadm runs the validators of `k8s.io/system-validators` (`validators/types_unix.go`:
//! `DefaultSysSpec.KernelSpec.Versions`, regular expressions over `uname -r`;
//! `validators/kernel_validator.go` and `validators/cgroup_validator_linux.go`). Each
//! Kubernetes minor vendors one release of it (kubernetes `CHANGELOG-1.xx.md`, Dependencies):
//!
//! | Kubernetes | system-validators | kernels accepted | otherwise |
//! | --- | --- | --- | --- |
//! | v1.29 – v1.31 | v1.8.0 | `^3\.[1-9][0-9].*$`, `^([4-9]\|[1-9][0-9]+)\.([0-9]+)\.([0-9]+).*$`: 3.10 or newer | error |
//! | v1.32 – v1.33 | v1.9.0 (v1.32), v1.9.1/v1.9.2 (v1.33) | `^4\.19.*$`, `^4\.[2-9][0-9].*$`, `^([5-9]\|[1-9][0-9]+)\.…`: 4.19 or newer | error |
//! | v1.34 | v1.10.1 | `^5\.4.*$`, `^5\.10.*$`, `^5\.15.*$`, `^([6-9]\|[1-9][0-9]+)\.…`: the 5.x LTS releases 5.4, 5.10, 5.15, or 6 and newer | warning (system-validators#49) |
//! | v1.35 | v1.12.1 | as v1.34 | warning |
//!
//! So KubeKey's fixed 4.9.17 is too low from v1.32 (kubeadm refuses 4.18, RHEL 8's kernel),
//! and from v1.34 kubeadm warns about any kernel outside its list (RHEL 9's 5.14 included).
//!
//! cgroup v1 (KEP-4569, KEP-5573): the kubelet of v1.31 puts it in maintenance mode and warns;
//! kubeadm warns from v1.32 (system-validators v1.9.0: "cgroups v1 support is in maintenance
//! mode"); the kubelet of v1.35 refuses to start on it (`failCgroupV1` defaults to true,
//! kubernetes#134298) and kubeadm's preflight errors for a v1.35 kubelet (system-validators
//! v1.12.1, `CgroupsValidator.KubeletVersion`).

use super::version::Version;

/// How a release judges something about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Verdict {
    /// Accepted.
    Accepts,
    /// A warning; the install goes on.
    Warns,
    /// An error: kubeadm's preflight (or the kubelet) stops.
    Refuses,
}

/// The kernels the kubeadm of the releases from `since` accepts, and what it does otherwise.
struct KernelSpec {
    /// The first Kubernetes release vendoring this spec.
    since: Version,
    /// The system-validators release, for messages.
    validators: &'static str,
    /// What it accepts, for messages.
    accepted: &'static str,
    /// Whether it accepts kernel `major.minor` (the regular expressions, on numbers).
    accepts: fn(u32, u32) -> bool,
    /// What a kernel it does not accept gets.
    otherwise: Verdict,
}

/// Whether `minor`, written in decimal, starts with `prefix` (`^5\.4.*$` matches 5.4 and 5.40).
fn starts_with(minor: u32, prefix: &str) -> bool {
    minor.to_string().starts_with(prefix)
}

const KERNEL_SPECS: &[KernelSpec] = &[
    KernelSpec {
        since: Version::new(1, 29, 0),
        validators: "v1.8.0",
        accepted: "3.10 or newer",
        accepts: |major, minor| (major == 3 && minor >= 10) || major >= 4,
        otherwise: Verdict::Refuses,
    },
    KernelSpec {
        since: Version::new(1, 32, 0),
        validators: "v1.9",
        accepted: "4.19 or newer",
        accepts: |major, minor| (major == 4 && minor >= 19) || major >= 5,
        otherwise: Verdict::Refuses,
    },
    KernelSpec {
        since: Version::new(1, 34, 0),
        validators: "v1.10.1",
        accepted: "5.4, 5.10, 5.15, or 6 and newer",
        accepts: |major, minor| {
            (major == 5 && ["4", "10", "15"].iter().any(|p| starts_with(minor, p))) || major >= 6
        },
        otherwise: Verdict::Warns,
    },
];

/// kubeadm's judgement of `kernel` (`uname -r`'s version), with what it accepts, for
/// `kubernetes`; an unknown release (`None`) gets the worst judgement of every release kk
/// installs, naming that release.
pub(super) fn kernel(kubernetes: Option<Version>, kernel: Version) -> KernelJudgement {
    let judge = |spec: &KernelSpec, release: Version| KernelJudgement {
        verdict: if (spec.accepts)(kernel.major, kernel.minor) {
            Verdict::Accepts
        } else {
            spec.otherwise
        },
        release,
        accepted: spec.accepted,
        validators: spec.validators,
    };
    match kubernetes {
        Some(release) => {
            let spec = KERNEL_SPECS
                .iter()
                .rev()
                .find(|spec| spec.since <= release)
                .unwrap_or(&KERNEL_SPECS[0]);
            judge(spec, release)
        }
        None => KERNEL_SPECS
            .iter()
            .map(|spec| judge(spec, spec.since))
            // The worst verdict; among equals, the oldest release.
            .reduce(|worst, next| {
                if next.verdict > worst.verdict {
                    next
                } else {
                    worst
                }
            })
            .unwrap_or_else(|| judge(&KERNEL_SPECS[0], KERNEL_SPECS[0].since)),
    }
}

/// What [`kernel`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KernelJudgement {
    /// Accepted, warned about, or refused.
    pub(super) verdict: Verdict,
    /// The release judged (the first of its spec when the release to install is unknown).
    pub(super) release: Version,
    /// What that release accepts.
    pub(super) accepted: &'static str,
    /// The system-validators release it vendors.
    pub(super) validators: &'static str,
}

/// The first release whose kubelet warns about cgroup v1 (maintenance mode, KEP-4569).
pub(super) const CGROUP_V1_MAINTENANCE: Version = Version::new(1, 31, 0);

/// The first release whose kubelet refuses cgroup v1 by default (`failCgroupV1`, KEP-5573).
pub(super) const CGROUP_V1_REFUSED: Version = Version::new(1, 35, 0);

/// How the release `kubernetes` treats a node on cgroup v1.
pub(super) fn cgroup_v1(kubernetes: Version) -> Verdict {
    if kubernetes >= CGROUP_V1_REFUSED {
        Verdict::Refuses
    } else if kubernetes >= CGROUP_V1_MAINTENANCE {
        Verdict::Warns
    } else {
        Verdict::Accepts
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict::{Accepts, Refuses, Warns};
    use super::*;

    /// Each row: the release (`None`: unknown), the kernel, the verdict and the release named.
    #[test]
    fn kernels_as_each_release_of_kubeadm_judges_them() {
        let v = Version::new;
        let table = [
            (
                Some(v(1, 29, 3)),
                "3.10.0-1160.el7.x86_64",
                Accepts,
                v(1, 29, 3),
            ),
            (Some(v(1, 31, 4)), "3.9.0", Refuses, v(1, 31, 4)),
            (Some(v(1, 31, 4)), "4.9.17", Accepts, v(1, 31, 4)),
            (Some(v(1, 32, 0)), "4.9.17", Refuses, v(1, 32, 0)),
            (
                Some(v(1, 32, 0)),
                "4.18.0-553.el8_10.x86_64",
                Refuses,
                v(1, 32, 0),
            ),
            (
                Some(v(1, 33, 1)),
                "4.19.90-52.22.v2207.ky10.x86_64",
                Accepts,
                v(1, 33, 1),
            ),
            (Some(v(1, 33, 1)), "4.20.0", Accepts, v(1, 33, 1)),
            (
                Some(v(1, 33, 1)),
                "5.14.0-362.el9.x86_64",
                Accepts,
                v(1, 33, 1),
            ),
            (Some(v(1, 34, 0)), "4.19.90", Warns, v(1, 34, 0)),
            (Some(v(1, 34, 0)), "5.4.0-150-generic", Accepts, v(1, 34, 0)),
            (Some(v(1, 34, 2)), "5.10.0-28-amd64", Accepts, v(1, 34, 2)),
            (
                Some(v(1, 34, 2)),
                "5.14.0-362.el9.x86_64",
                Warns,
                v(1, 34, 2),
            ),
            (Some(v(1, 35, 0)), "5.15.0-91-generic", Accepts, v(1, 35, 0)),
            (Some(v(1, 35, 0)), "6.1.0-18-amd64", Accepts, v(1, 35, 0)),
            (Some(v(1, 35, 0)), "5.16.0", Warns, v(1, 35, 0)),
            // Older than any release kk installs: judged as the oldest.
            (Some(v(1, 28, 0)), "3.9.0", Refuses, v(1, 28, 0)),
            // Unknown: the worst of every release, naming it.
            (None, "6.8.0", Accepts, v(1, 29, 0)),
            (None, "4.18.0", Refuses, v(1, 32, 0)),
            (None, "3.9.0", Refuses, v(1, 29, 0)),
            (None, "5.14.0", Warns, v(1, 34, 0)),
        ];
        for (release, text, verdict, named) in table {
            let found = Version::find(text).expect(text);
            let judgement = kernel(release, found);
            assert_eq!(
                (judgement.verdict, judgement.release),
                (verdict, named),
                "{release:?} {text}"
            );
        }
    }

    #[test]
    fn cgroup_v1_by_release() {
        let v = Version::new;
        for (release, verdict) in [
            (v(1, 29, 0), Accepts),
            (v(1, 30, 14), Accepts),
            (v(1, 31, 0), Warns),
            (v(1, 34, 3), Warns),
            (v(1, 35, 0), Refuses),
            (v(1, 36, 1), Refuses),
        ] {
            assert_eq!(cgroup_v1(release), verdict, "{release}");
        }
    }
}
