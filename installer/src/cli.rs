//! Command line of `kk-install`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Verifies a kk bundle and installs Kubernetes from it in an airgap.
///
/// kk-install runs on the disconnected side, with nothing but the bundle file (or its parts): it opens and
/// verifies the bundle, checks the nodes, and installs the cluster from the bundle's content.
///
/// Without a subcommand, `kk-install --bundle B -i inventory.yaml` runs the install, every phase
/// in order (see `--phase`); a rerun continues where the last run stopped. Every subcommand that
/// reads a bundle takes it as its first argument (`kk-install verify B`; `--bundle B` works too).
#[derive(Debug, Parser)]
#[command(
    name = "kk-install",
    version,
    arg_required_else_help = true,
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) install: InstallArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) verbosity: Verbosity,
}

/// How much the tool says on stderr; flags of every command.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct Verbosity {
    /// Say more on stderr, repeatable: `-v` what it does, `-vv` debug messages (`KK_LOG` overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", help_heading = "Global options")]
    pub(crate) verbose: u8,
    /// Only warnings and errors on stderr: no progress bar, no progress lines.
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub(crate) quiet: bool,
}

impl Verbosity {
    /// The tracing filter these flags ask for, from a command's usual level: `warn` for a command
    /// whose result is its output, `info` for a server whose log is.
    pub(crate) fn filter(self, usual: Level) -> &'static str {
        const LEVELS: [&str; 4] = ["warn", "info", "debug", "trace"];
        if self.quiet {
            return LEVELS[0];
        }
        let usual = match usual {
            Level::Warn => 0,
            Level::Info => 1,
        };
        LEVELS[(usual + usize::from(self.verbose)).min(LEVELS.len() - 1)]
    }
}

/// The log level a command runs at without `-v`/`-q`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Level {
    /// Warnings and errors only.
    Warn,
    /// Also what a server does.
    Info,
}

/// How to reach the nodes: flags of the commands that talk to nodes (and only of them).
#[derive(Debug, Args)]
pub(crate) struct ReachArgs {
    /// The `known_hosts` file host keys are checked against (default: `~/.ssh/known_hosts`).
    #[arg(long)]
    pub(crate) known_hosts: Option<PathBuf>,
    /// Record the host key of a node `known_hosts` does not know instead of refusing it
    /// (a changed key is always refused).
    #[arg(long)]
    pub(crate) accept_new_host_keys: bool,
    /// Nodes worked on at once.
    // `--concurrency`, the old name, still works for existing scripts (a hidden alias). 64: a
    // node being waited on costs an SSH connection, not a core; 10 made 24 nodes three waves
    // per step and 100 nodes ten (issue 25's precheck measurement).
    #[arg(short = 'j', long, alias = "concurrency", default_value_t = 64)]
    pub(crate) jobs: usize,
    /// Where hook scripts are taken from, and logs (`logs/<node>.log`) and facts
    /// (`facts/<node>.json`) written to.
    #[arg(long, default_value = ".")]
    pub(crate) work_dir: PathBuf,
}

/// The install: a bundle and the cluster to put it on.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The bundle: a file, a `.split.json` parts index, or a first part.
    #[arg(long, requires = "inventory")]
    pub(crate) bundle: Option<PathBuf>,
    /// The inventory (KubeKey `kind: Inventory`).
    #[arg(short = 'i', long, requires = "bundle")]
    pub(crate) inventory: Option<PathBuf>,
    /// The cluster config (KubeKey `kind: Config`); defaults apply without one.
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) checks: CheckOptions,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
    /// Continue the install recorded in the work directory (an error when there is none).
    #[arg(long)]
    pub(crate) resume: bool,
    /// Run only this phase, its steps again even if done.
    #[arg(long, value_name = "NAME", value_parser = phase_parser())]
    pub(crate) phase: Option<kk_install::install::Phase>,
    /// How to print the final table (progress lines go to stderr).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

/// The phases by name, from [`Phase::ALL`](kk_install::install::Phase::ALL): the help lists them
/// all and a wrong name is refused with the list.
fn phase_parser() -> impl clap::builder::TypedValueParser<Value = kk_install::install::Phase> {
    use clap::builder::TypedValueParser as _;
    use kk_install::install::Phase;
    clap::builder::PossibleValuesParser::new(Phase::ALL.map(Phase::name)).map(|name: String| {
        Phase::from_name(&name).unwrap_or_else(|| unreachable!("`{name}` is in Phase::ALL"))
    })
}

/// How the precheck runs.
#[derive(Debug, Args)]
pub(crate) struct CheckOptions {
    /// Waive a precheck rule by id (`kubeadm.swap`) or id prefix (`kubeadm.port`); repeatable.
    #[arg(long = "ignore", value_name = "ID")]
    pub(crate) ignore: Vec<String>,
    /// Data size of the etcd disk check (fio), per etcd node; etcd's own guidance uses 22m.
    #[arg(long, default_value = "22m", value_parser = fio_size)]
    pub(crate) fio_size: String,
}

/// A flag's value that its parser refuses (clap shows the message, naming the flag).
#[derive(Debug, thiserror::Error)]
#[error("`{value}` is not {expected}")]
struct InvalidValue {
    /// The value as given.
    value: String,
    /// What the flag takes.
    expected: &'static str,
}

/// A fio size: digits and an optional unit letter (it becomes part of a shell command).
fn fio_size(text: &str) -> Result<String, InvalidValue> {
    let digits = text.trim_end_matches(['k', 'm', 'g', 'K', 'M', 'G']);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && text.len() - digits.len() <= 1
    {
        Ok(text.to_owned())
    } else {
        Err(InvalidValue {
            value: text.to_owned(),
            expected: "a size like `22m` or `2048k`",
        })
    }
}

/// The bundle and the cluster a command works on, and how it prints.
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// The inventory (KubeKey `kind: Inventory`).
    #[arg(short = 'i', long)]
    pub(crate) inventory: PathBuf,
    /// The cluster config (KubeKey `kind: Config`); defaults apply without one.
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

/// `kk-install plan`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    /// The upgrade to the bundle instead, from the install recorded in the work directory: its
    /// steps per node, or the refusal kubeadm would make.
    #[arg(long)]
    pub(crate) upgrade: bool,
    // The plan reaches no node, but takes the install's flags so that any install command line
    // can be turned into its plan by inserting `plan`.
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ResetArgs {
    /// The inventory (KubeKey `kind: Inventory`).
    #[arg(short = 'i', long)]
    pub(crate) inventory: PathBuf,
    /// The cluster config (KubeKey `kind: Config`).
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    /// Confirms: reset destroys the cluster on every node.
    #[arg(long)]
    pub(crate) yes: bool,
    /// Also deletes the data: etcd's, the registry's store, containerd's images, the NFS share's
    /// volumes.
    #[arg(long)]
    pub(crate) purge: bool,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PrecheckArgs {
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    #[command(flatten)]
    pub(crate) checks: CheckOptions,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
}

/// `kk-install fetch` and `registry ping`, run on a node by the install: the node agent's
/// own arguments (`kk-node fetch`/`ping`), so the two programs take the same flags.
pub(crate) use kk_node::cli::{FetchArgs, PingArgs};

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Checks every node of the inventory and says every reason the install would fail.
    Precheck(PrecheckArgs),
    /// Prints the install's steps per node, without touching a node.
    Plan(PlanArgs),
    /// Takes the cluster off every node of the inventory (`kubeadm reset`, kk's units and files).
    Reset(ResetArgs),
    /// On a node: fetches a binary from kk's registry, verifies and installs it.
    Fetch(FetchArgs),
    /// Checks everything in a bundle: header, checksum list, every member, every part.
    Verify(VerifyArgs),
    /// Shows what a bundle holds, from its header (no full decompression).
    Inspect(InspectArgs),
    /// Verifies a bundle while unpacking it into a content store (the registry's data).
    Unpack(UnpackArgs),
    /// The local OCI registry that serves a content store.
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// The cluster's certificates: their expiries, and renewing them.
    #[command(subcommand)]
    Certs(CertsCommand),
    /// Takes one node out of the cluster (drain, etcd member, `kubeadm reset`, `/etc/hosts`).
    ///
    /// The node is drained and deleted from Kubernetes, removed from kk's etcd when it is a
    /// member, reset as `kk-install reset` resets a node (its etcd data removed too), its lines
    /// taken out of kk's `/etc/hosts` block on the other nodes and its steps out of the install
    /// state. Refused for the first control plane, the registry host and an etcd member whose
    /// removal would lose quorum. Then remove the host from the inventory.
    DeleteNode(DeleteNodeArgs),
    /// Upgrades the installed cluster to the bundle, one node at a time, as kubeadm's guide does.
    ///
    /// The bundle is a full bundle or a delta onto the installed one; the steps are those `plan
    /// --upgrade` prints, refused before any node is touched where kubeadm would refuse them. A
    /// rerun continues where the last run stopped.
    Upgrade(UpgradeArgs),
}

/// `kk-install delete-node`.
#[derive(Debug, Args)]
pub(crate) struct DeleteNodeArgs {
    /// The node, by its inventory name.
    pub(crate) name: String,
    /// The inventory (KubeKey `kind: Inventory`) that still has the node.
    #[arg(short = 'i', long)]
    pub(crate) inventory: PathBuf,
    /// The cluster config (KubeKey `kind: Config`); defaults apply without one.
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    /// Confirms: the node's workloads are evicted and Kubernetes is taken off it.
    #[arg(long)]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
}

/// `kk-install upgrade`.
#[derive(Debug, Args)]
pub(crate) struct UpgradeArgs {
    /// The bundle upgraded to, the inventory and config of the install, the final table's format
    /// (progress lines go to stderr).
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    /// How nodes are reached; `--work-dir` is the install's, whose state names the installed
    /// bundle.
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CertsCommand {
    /// Lists every certificate kk and kubeadm made on every node: node, path, subject, expiry,
    /// days left (expired and expiring ones marked).
    Check(CertsCheckArgs),
    /// Renews certificates: kk's in the master copy of the work directory (same keys, new
    /// validity) copied to the nodes, the kubeconfigs by `kubeadm certs renew` on the control
    /// planes; the services that read them restarted one node at a time. CAs are not rotated.
    Renew(CertsRenewArgs),
}

/// The cluster a `certs` command reads: the install's inventory and config.
#[derive(Debug, Args)]
pub(crate) struct CertsCluster {
    /// The inventory (KubeKey `kind: Inventory`).
    #[arg(short = 'i', long)]
    pub(crate) inventory: PathBuf,
    /// The cluster config (KubeKey `kind: Config`); defaults apply without one.
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
}

#[derive(Debug, Args)]
pub(crate) struct CertsCheckArgs {
    #[command(flatten)]
    pub(crate) cluster: CertsCluster,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct CertsRenewArgs {
    #[command(flatten)]
    pub(crate) cluster: CertsCluster,
    /// Renew every certificate kk and kubeadm made (not the CAs).
    #[arg(long, conflicts_with = "names")]
    pub(crate) all: bool,
    /// kubeadm's names: `apiserver`, `apiserver-kubelet-client`, `front-proxy-client`,
    /// `apiserver-etcd-client`, `etcd-healthcheck-client`, `etcd-server`, `etcd-peer`,
    /// `registry` (kk's registry), `admin.conf`, `super-admin.conf`, `controller-manager.conf`,
    /// `scheduler.conf`.
    #[arg(value_name = "NAME", required_unless_present = "all")]
    pub(crate) names: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RegistryCommand {
    /// Serves a content store read-only over the OCI distribution API (TLS with `--tls-cert`).
    Serve(ServeArgs),
    /// Creates (or reuses) a CA and issues the registry's serving certificate.
    Cert(CertArgs),
    /// Copies everything in a content store into an existing registry, digests unchanged.
    Push(PushArgs),
    /// Waits until a registry answers over TLS verified with a CA.
    Ping(PingArgs),
    /// Lists the bundles unpacked into a content store (its revisions), oldest first.
    Revisions(RevisionsArgs),
    /// Removes the blobs no kept revision needs: keeps the `--keep` newest revisions.
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RevisionsArgs {
    /// The content store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub(crate) store: PathBuf,
    /// How to print them.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// The content store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub(crate) store: PathBuf,
    /// How many of the newest revisions to keep: 2 keeps the installed one and the previous
    /// one (the rollback), 1 the installed one alone.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) keep: u16,
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// How to print what was removed.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct PushArgs {
    #[command(flatten)]
    pub(crate) source: StoreSource,
    /// The registry, `host[:port]`.
    #[arg(long)]
    pub(crate) to: String,
    /// Talk plain HTTP to it.
    #[arg(long, conflicts_with = "ca")]
    pub(crate) plain_http: bool,
    /// With `--plain-http`, send the password anyway, readable by anyone on the path (refused
    /// otherwise).
    #[arg(long, requires = "plain_http")]
    pub(crate) allow_plain_http_password: bool,
    /// Trust this CA certificate (PEM) for it.
    #[arg(long)]
    pub(crate) ca: Option<PathBuf>,
    /// User name for basic auth.
    #[arg(long, requires = "password_env")]
    pub(crate) username: Option<String>,
    /// Environment variable holding the password (never a command-line argument).
    #[arg(long, requires = "username")]
    pub(crate) password_env: Option<String>,
    /// Uploads at once.
    #[arg(short = 'j', long, default_value_t = 4)]
    pub(crate) jobs: usize,
    /// The nodes' platform (`linux/amd64`), repeatable, preferred first: where the registry
    /// refuses an index the bundle has only some platforms of, its tags point at this
    /// platform's manifest (the first the bundle has when none is given).
    #[arg(long = "platform", value_name = "OS/ARCH")]
    pub(crate) platforms: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CertArgs {
    /// Directory for `ca.crt`/`ca.key` (reused when present) and `registry.crt`/`registry.key`.
    #[arg(long)]
    pub(crate) ca_out: PathBuf,
    /// DNS names and IP addresses the registry is reached by.
    #[arg(long, value_delimiter = ',', required = true)]
    pub(crate) names: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) source: StoreSource,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:5000")]
    pub(crate) listen: std::net::SocketAddr,
    /// Serve TLS with this PEM certificate (chain).
    #[arg(long, requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
}

/// The bundle a command reads: its first argument, or `--bundle B` (the older form).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct BundleArg {
    /// The bundle: a file, a `.split.json` parts index, or a first part (`--bundle BUNDLE` works
    /// too).
    #[arg(value_name = "BUNDLE")]
    positional: Option<PathBuf>,
    #[arg(long = "bundle", value_name = "BUNDLE", hide = true)]
    flag: Option<PathBuf>,
}

impl BundleArg {
    /// The bundle's path, however it was given.
    pub(crate) fn path(&self) -> &std::path::Path {
        self.positional
            .as_deref()
            .or(self.flag.as_deref())
            .unwrap_or_else(|| unreachable!("clap requires one of the two"))
    }
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// For a delta bundle: the store it is to be unpacked into, checked for every blob the
    /// delta takes from its base.
    #[arg(long)]
    pub(crate) store: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
    /// How to print what was verified.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

/// The keys a bundle must be signed by.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// Refuse the bundle unless it is signed by this public key (cosign's `cosign.pub`), checked
    /// before anything is unpacked; repeatable (any of them will do).
    #[arg(long = "trusted-key", value_name = "PUB")]
    pub(crate) trusted_keys: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
    /// Print the bundle's SBOM (SPDX 2.3 JSON) instead, verified, without unpacking the bundle.
    #[arg(long, conflicts_with = "output")]
    pub(crate) sbom: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UnpackArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// The content store (an OCI image layout), created if needed; shared by all bundles.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub(crate) store: PathBuf,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
    /// How to print what was unpacked.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

/// Where the registry's content lives unless `--store` says otherwise.
pub(crate) const DEFAULT_STORE: &str = "/var/lib/kk/store";

/// What the registry serves or pushes: a content store, filled first from a bundle if one is
/// given. The registry always works from the unpacked store (one copy on disk, read in place);
/// `--bundle` saves the separate `kk-install unpack` step and, like it, verifies every member
/// and writes only what the store lacks.
#[derive(Debug, Args)]
pub(crate) struct StoreSource {
    /// Unpack this bundle (a file, a `.split.json` parts index, or a first part) into the store
    /// first (`--bundle BUNDLE` works too).
    #[arg(value_name = "BUNDLE", conflicts_with = "bundle_flag")]
    bundle: Option<PathBuf>,
    #[arg(long = "bundle", value_name = "BUNDLE", hide = true)]
    bundle_flag: Option<PathBuf>,
    /// The content store made by `kk-install unpack`.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub(crate) store: PathBuf,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
}

impl StoreSource {
    /// The bundle to unpack first, however it was given.
    pub(crate) fn bundle(&self) -> Option<&std::path::Path> {
        self.bundle.as_deref().or(self.bundle_flag.as_deref())
    }
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// For people.
    Text,
    /// For programs.
    Json,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::{CommandFactory, Parser as _};

    #[test]
    fn value_parsers_take_what_the_flag_takes_and_name_what_they_refuse() {
        for good in ["22m", "2048k", "1G", "512"] {
            assert_eq!(super::fio_size(good).expect(good), good);
        }
        for bad in ["", "m", "22mb", "2 m", "22m; rm -rf /"] {
            let error = super::fio_size(bad).expect_err(bad).to_string();
            assert_eq!(
                error,
                format!("`{bad}` is not a size like `22m` or `2048k`")
            );
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn inspect_sbom_is_a_flag_that_excludes_an_output_format() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(
                [&["kk-install", "inspect", "--bundle", "b.tar.zst"], args].concat(),
            )
        };
        let Ok(Cli {
            command: Some(super::Command::Inspect(args)),
            ..
        }) = parse(&["--sbom"])
        else {
            panic!("`inspect --sbom` does not parse");
        };
        assert!(args.sbom);
        assert!(parse(&["--sbom", "--output", "json"]).is_err());
    }

    #[test]
    fn verbosity_flags_set_the_log_level() {
        use super::Level::{Info, Warn};
        let cases: &[(&[&str], super::Level, &str)] = &[
            (&[], Warn, "warn"),
            (&["-v"], Warn, "info"),
            (&["-vv"], Warn, "debug"),
            (&["-vvvv"], Warn, "trace"),
            (&[], Info, "info"),
            (&["-v"], Info, "debug"),
            (&["-q"], Info, "warn"),
        ];
        for (flags, usual, filter) in cases {
            let cli = Cli::try_parse_from([&["kk-install", "registry", "serve"], *flags].concat())
                .expect("parses");
            assert_eq!(cli.verbosity.filter(*usual), *filter, "{flags:?}");
        }
        assert!(Cli::try_parse_from(["kk-install", "verify", "b", "-v", "-q"]).is_err());
    }

    /// The grammar: a bundle is the first argument of every command that reads one, `--bundle`
    /// still works; `-j` (or the old `--concurrency`) sets the parallelism of node commands.
    #[test]
    fn a_bundle_is_positional_or_given_with_bundle() {
        for command in [
            &["verify"][..],
            &["inspect"],
            &["unpack"],
            &["plan", "-i", "inv.yaml"],
        ] {
            for form in [&["b.tar.zst"][..], &["--bundle", "b.tar.zst"]] {
                let args = [&["kk-install"][..], command, form].concat();
                let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
                let path = match cli.command {
                    Some(super::Command::Verify(a)) => a.bundle.path().to_owned(),
                    Some(super::Command::Inspect(a)) => a.bundle.path().to_owned(),
                    Some(super::Command::Unpack(a)) => a.bundle.path().to_owned(),
                    Some(super::Command::Plan(a)) => a.cluster.bundle.path().to_owned(),
                    other => panic!("{args:?} parsed as {other:?}"),
                };
                assert_eq!(path, std::path::Path::new("b.tar.zst"), "{args:?}");
            }
        }
        assert!(
            Cli::try_parse_from(["kk-install", "verify"]).is_err(),
            "a bundle is needed"
        );
        assert!(
            Cli::try_parse_from(["kk-install", "verify", "a", "--bundle", "b"]).is_err(),
            "one bundle only"
        );
        for jobs in ["-j", "--jobs", "--concurrency"] {
            let cli = Cli::try_parse_from(["kk-install", "--bundle", "b", "-i", "i", jobs, "3"])
                .unwrap_or_else(|e| panic!("{jobs}: {e}"));
            assert_eq!(cli.reach.jobs, 3, "{jobs}");
        }
        assert!(
            Cli::try_parse_from(["kk-install", "verify", "b", "--known-hosts", "k"]).is_err(),
            "SSH flags only on the commands that reach nodes"
        );
    }

    #[test]
    fn fio_sizes_are_checked_before_they_reach_a_shell() {
        for (text, ok) in [
            ("22m", true),
            ("2048k", true),
            ("100", true),
            ("", false),
            ("2mm", false),
            ("1m;rm", false),
        ] {
            assert_eq!(super::fio_size(text).is_ok(), ok, "{text}");
        }
    }

    #[test]
    fn version_is_the_crate_version() {
        let cmd = Cli::command();
        assert_eq!(cmd.get_name(), "kk-install");
        assert_eq!(cmd.get_version(), Some(env!("CARGO_PKG_VERSION")));
        assert!(
            cmd.get_about()
                .is_some_and(|about| !about.to_string().is_empty()),
            "kk-install needs an about text"
        );
    }

    /// Every command's `--help`, pinned: a change to the grammar shows in the snapshot diff.
    #[test]
    fn help_of_every_command() {
        let mut cli = Cli::command().term_width(100);
        cli.build();
        let mut pages = Vec::new();
        help_pages(&mut cli, "kk-install", &mut pages);
        assert!(pages.len() > 1, "no subcommands");
        for (name, help) in pages {
            insta::assert_snapshot!(format!("help_{name}"), help);
        }
    }

    /// `(command path, long help)` of `command` and every subcommand below it.
    fn help_pages(command: &mut clap::Command, path: &str, pages: &mut Vec<(String, String)>) {
        pages.push((path.to_owned(), command.render_long_help().to_string()));
        // clap's generated `help` subcommand only repeats the pages taken here.
        for sub in command
            .get_subcommands_mut()
            .filter(|sub| sub.get_name() != "help")
        {
            let path = format!("{path}_{}", sub.get_name());
            help_pages(sub, &path, pages);
        }
    }
}
