//! Command line of `kk-install`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Verifies a kk bundle and installs Kubernetes from it in an airgap.
///
/// kk-install runs on the disconnected side, with nothing but the bundle file (or its parts): it opens and
/// verifies the bundle, checks the nodes, and installs the cluster from the bundle's content.
///
/// Without a subcommand, `kk-install --bundle B -i inventory.yaml` runs the install: `pre_hook`,
/// precheck, os, pki, registry, runtime, etcd, `post_hook`; a rerun continues where the last run
/// stopped.
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
}

/// How to reach the nodes: flags every command that talks to nodes shares.
#[derive(Debug, Args)]
pub(crate) struct ReachArgs {
    /// The `known_hosts` file host keys are checked against (default: `~/.ssh/known_hosts`).
    #[arg(long, global = true)]
    pub(crate) known_hosts: Option<PathBuf>,
    /// Record the host key of a node `known_hosts` does not know instead of refusing it
    /// (a changed key is always refused).
    #[arg(long, global = true)]
    pub(crate) accept_new_host_keys: bool,
    /// Nodes worked on at once.
    #[arg(long, global = true, default_value_t = 10)]
    pub(crate) concurrency: usize,
    /// Where hook scripts are taken from, and logs (`logs/<node>.log`) and facts
    /// (`facts/<node>.json`) written to.
    #[arg(long, global = true, default_value = ".")]
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
    /// Continue the install recorded in the work directory (an error when there is none).
    #[arg(long)]
    pub(crate) resume: bool,
    /// Run only this phase, its steps again even if done (`pre_hook`, `precheck`, `os`, `pki`,
    /// `registry`, `runtime`, `etcd`, `post_hook`).
    #[arg(long, value_name = "NAME", value_parser = phase)]
    pub(crate) phase: Option<kk_install::install::Phase>,
    /// How to print the final table (progress lines go to stderr).
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub(crate) output: Output,
}

fn phase(name: &str) -> Result<kk_install::install::Phase, String> {
    kk_install::install::Phase::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = kk_install::install::Phase::ALL
            .iter()
            .map(|p| p.name())
            .collect();
        format!("`{name}` is not a phase; phases: {}", names.join(", "))
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

/// A fio size: digits and an optional unit letter (it becomes part of a shell command).
fn fio_size(text: &str) -> Result<String, String> {
    let digits = text.trim_end_matches(['k', 'm', 'g', 'K', 'M', 'G']);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && text.len() - digits.len() <= 1
    {
        Ok(text.to_owned())
    } else {
        Err(format!("`{text}` is not a size like `22m` or `2048k`"))
    }
}

/// The bundle and the cluster a command works on, and how it prints.
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    /// The bundle: a file, a `.split.json` parts index, or a first part.
    #[arg(long)]
    pub(crate) bundle: PathBuf,
    /// The inventory (KubeKey `kind: Inventory`).
    #[arg(short = 'i', long)]
    pub(crate) inventory: PathBuf,
    /// The cluster config (KubeKey `kind: Config`); defaults apply without one.
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub(crate) output: Output,
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
    /// Also deletes the data: etcd's, the registry's store, containerd's images.
    #[arg(long)]
    pub(crate) purge: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PrecheckArgs {
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    #[command(flatten)]
    pub(crate) checks: CheckOptions,
}

/// `kk-install fetch`, run on a node by the install.
#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    /// The artifact, `repository:tag` (`kk.internal/binaries/etcd:v3.4.23`).
    pub(crate) reference: String,
    /// kk's registry, `host:port` (HTTPS).
    #[arg(long)]
    pub(crate) registry: String,
    /// The only CA the registry's certificate may chain to.
    #[arg(long)]
    pub(crate) ca: PathBuf,
    /// A manifest digest the bundle lists for the reference; anything else is refused.
    #[arg(long, required = true, value_parser = digest)]
    pub(crate) expect: Vec<bundle_spec::Sha256Digest>,
    /// The directory the files go to.
    #[arg(long)]
    pub(crate) into: PathBuf,
    /// A program to take from a release archive (all when none), or the name of a plain file
    /// (a chart's layer, which has no file name of its own, is kept whole under this name).
    #[arg(long = "file", value_name = "NAME")]
    pub(crate) files: Vec<String>,
    /// How to print what was installed.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub(crate) output: Output,
}

fn digest(text: &str) -> Result<bundle_spec::Sha256Digest, String> {
    text.strip_prefix("sha256:")
        .and_then(bundle_spec::Sha256Digest::from_hex)
        .ok_or_else(|| format!("`{text}` is not a digest `sha256:<64 hex digits>`"))
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Checks every node of the inventory and says every reason the install would fail.
    Precheck(PrecheckArgs),
    /// Prints the install's steps per node, without touching a node.
    Plan(ClusterArgs),
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
}

#[derive(Debug, Args)]
pub(crate) struct PingArgs {
    /// The registry, `host:port`.
    #[arg(long)]
    pub(crate) registry: String,
    /// The only CA its certificate may chain to.
    #[arg(long)]
    pub(crate) ca: PathBuf,
    /// Seconds to keep trying.
    #[arg(long, default_value_t = 30)]
    pub(crate) wait: u64,
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
    #[arg(long, default_value_t = 4)]
    pub(crate) jobs: usize,
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

#[derive(Debug, Args)]
pub(crate) struct BundleArg {
    /// The bundle: a file, a `.split.json` parts index, or a first part.
    #[arg(long)]
    pub(crate) bundle: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// For a delta bundle: the store it is to be unpacked into, checked for every blob the
    /// delta takes from its base.
    #[arg(long)]
    pub(crate) store: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
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
}

/// Where the registry's content lives unless `--store` says otherwise.
pub(crate) const DEFAULT_STORE: &str = "/var/lib/kk/store";

/// What the registry serves or pushes: a content store, filled first from a bundle if one is
/// given. The registry always works from the unpacked store (one copy on disk, read in place);
/// `--bundle` saves the separate `kk-install unpack` step and, like it, verifies every member
/// and writes only what the store lacks.
#[derive(Debug, Args)]
pub(crate) struct StoreSource {
    /// Unpack this bundle (a file, a `.split.json` parts index, or a first part) into the store first.
    #[arg(long)]
    pub(crate) bundle: Option<PathBuf>,
    /// The content store made by `kk-install unpack`.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub(crate) store: PathBuf,
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
