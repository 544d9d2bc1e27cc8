//! Command line of `kk-install`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Verifies a kk bundle and installs Kubernetes from it in an airgap.
///
/// kk-install runs on the disconnected side, with nothing but the bundle file (or its parts): it opens and
/// verifies the bundle, checks the nodes, and installs the cluster from the bundle's content.
#[derive(Debug, Parser)]
#[command(name = "kk-install", version, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Checks everything in a bundle: header, checksum list, every member, every part.
    Verify(BundleArg),
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
pub(crate) struct InspectArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub(crate) output: Output,
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
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
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
}
