//! The command line of `kk-node`: `fetch` and `ping`, with the flags of `kk-install fetch` and
//! `kk-install registry ping`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use bundle_spec::Sha256Digest;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::fetch::{self, FetchRequest};

/// kk's node agent: fetches verified binaries from kk's registry onto this node.
#[derive(Debug, Parser)]
#[command(name = "kk-node", version, arg_required_else_help = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The agent's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fetches a binary from kk's registry, verifies and installs it.
    Fetch(FetchArgs),
    /// Waits until the registry answers over TLS.
    Ping(PingArgs),
}

/// `kk-node fetch`: the flags of `kk-install fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The artifact, `repository:tag` (`kk.internal/binaries/etcd:v3.4.23`).
    pub reference: String,
    /// A host of kk's registry, `host:port` (HTTPS); repeatable: tried in the order given, the
    /// next when one cannot be reached, times out or answers 5xx.
    #[arg(long = "registry", value_name = "HOST:PORT", required = true)]
    pub registries: Vec<String>,
    /// The only CA the registry's certificate may chain to.
    #[arg(long)]
    pub ca: PathBuf,
    /// A manifest digest the bundle lists for the reference; anything else is refused.
    #[arg(long, required = true, value_parser = digest)]
    pub expect: Vec<Sha256Digest>,
    /// The directory the files go to.
    #[arg(long)]
    pub into: PathBuf,
    /// A program to take from a release archive (all when none), or the name of a plain file
    /// (a chart's layer, which has no file name of its own, is kept whole under this name).
    #[arg(long = "file", value_name = "NAME")]
    pub files: Vec<String>,
    /// How to print what was installed.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub output: Output,
    /// A file holding `username:password` for a registry that wants credentials.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
}

/// `kk-node ping`: the flags of `kk-install registry ping`.
#[derive(Debug, Args)]
pub struct PingArgs {
    /// A registry host, `host:port`; repeatable: every one must answer (each host a node's
    /// `hosts.toml` lists is checked, not just the first that answers).
    #[arg(long = "registry", value_name = "HOST:PORT", required = true)]
    pub registries: Vec<String>,
    /// The only CA its certificate may chain to.
    #[arg(long)]
    pub ca: PathBuf,
    /// Seconds to keep trying.
    #[arg(long, default_value_t = 30)]
    pub wait: u64,
    /// A file holding `username:password`: the registry must accept them.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// For programs.
    Json,
}

fn digest(text: &str) -> Result<Sha256Digest, String> {
    text.strip_prefix("sha256:")
        .and_then(Sha256Digest::from_hex)
        .ok_or_else(|| format!("`{text}` is not a digest `sha256:<64 hex digits>`"))
}

/// Runs `cli`; returns what to print.
pub fn run(cli: &Cli) -> anyhow::Result<String> {
    // One thread: a node fetches one artifact per call, and the agent's work is waiting.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the agent's runtime")?;
    match &cli.command {
        Command::Fetch(args) => fetch(&runtime, args),
        Command::Ping(args) => ping(&runtime, args),
    }
}

/// `fetch` on `runtime`: what it prints.
pub fn fetch(runtime: &tokio::runtime::Runtime, args: &FetchArgs) -> anyhow::Result<String> {
    let fetched = runtime
        .block_on(fetch::fetch(&request(args)))
        .with_context(|| {
            format!(
                "cannot fetch `{}` from `{}`",
                args.reference,
                args.registries.join(", ")
            )
        })?;
    Ok(render(&fetched, args.output)?)
}

/// `ping` on `runtime`: what it prints.
pub fn ping(runtime: &tokio::runtime::Runtime, args: &PingArgs) -> anyhow::Result<String> {
    let registries = args.registries.join(", ");
    runtime
        .block_on(fetch::ping(
            &args.registries,
            &args.ca,
            args.auth_file.as_deref(),
            Duration::from_secs(args.wait),
        ))
        .with_context(|| format!("registry `{registries}` is not ready"))?;
    Ok(format!("ok: {registries} answers over TLS\n"))
}

/// The request `args` ask for, with the node's stamp directory.
pub fn request(args: &FetchArgs) -> FetchRequest {
    FetchRequest {
        registries: args.registries.clone(),
        ca: args.ca.clone(),
        reference: args.reference.clone(),
        expect: args.expect.clone(),
        into: args.into.clone(),
        files: args.files.clone(),
        stamp_dir: fetch::STAMP_DIR.into(),
        auth_file: args.auth_file.clone(),
    }
}

/// What a fetch prints: one line per file, or one JSON object.
pub fn render(fetched: &fetch::Fetched, output: Output) -> serde_json::Result<String> {
    if output == Output::Json {
        return Ok(format!("{}\n", serde_json::to_string(fetched)?));
    }
    let verb = if fetched.unchanged {
        "already in place"
    } else {
        "installed"
    };
    let mut text = String::new();
    for (path, sha) in &fetched.files {
        let _ = writeln!(text, "{verb}: {} (sha256 {sha})", path.display());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kk-node").chain(args.iter().copied()))
    }

    #[test]
    fn fetch_takes_the_flags_of_kk_install_fetch() {
        let cli = parse(&[
            "fetch",
            "kk.internal/binaries/etcd:v3.4.23",
            "--registry",
            "10.0.0.1:5000",
            "--ca",
            "/etc/kubekey/ca.crt",
            "--expect",
            DIGEST,
            "--expect",
            DIGEST,
            "--into",
            "/usr/local/bin",
            "--file",
            "etcd",
            "--file",
            "etcdctl",
            "--output",
            "json",
            "--auth-file",
            "/etc/kubekey/auth",
        ])
        .expect("parses");
        let Command::Fetch(args) = cli.command else {
            panic!("not fetch: {cli:?}");
        };
        let request = request(&args);
        assert_eq!(request.registries, ["10.0.0.1:5000"]);
        assert_eq!(request.expect.len(), 2);
        assert_eq!(request.files, ["etcd", "etcdctl"]);
        assert_eq!(request.stamp_dir, PathBuf::from(fetch::STAMP_DIR));
        assert_eq!(request.auth_file, Some(PathBuf::from("/etc/kubekey/auth")));
        assert_eq!(args.output, Output::Json);
    }

    #[test]
    fn ping_takes_the_flags_of_registry_ping_and_waits_30s_by_default() {
        let cli = parse(&["ping", "--registry", "r:5000", "--ca", "ca.crt"]).expect("parses");
        let Command::Ping(args) = cli.command else {
            panic!("not ping: {cli:?}");
        };
        assert_eq!(
            (args.registries.as_slice(), args.wait),
            (&["r:5000".to_owned()][..], 30)
        );
        assert!(args.auth_file.is_none());
    }

    #[test]
    fn what_the_agent_refuses() {
        for (args, says) in [
            (
                &[
                    "fetch",
                    "a:1",
                    "--registry",
                    "r",
                    "--ca",
                    "c",
                    "--into",
                    "/",
                ][..],
                "--expect",
            ),
            (
                &[
                    "fetch",
                    "a:1",
                    "--registry",
                    "r",
                    "--ca",
                    "c",
                    "--into",
                    "/",
                    "--expect",
                    "md5:00",
                ],
                "md5:00",
            ),
            (&["ping", "--ca", "c"], "--registry"),
            (&["unpack"], "unpack"),
        ] {
            let error = parse(args).expect_err("refused").to_string();
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }

    #[test]
    fn a_fetch_prints_one_line_per_file_or_json() {
        let fetched = fetch::Fetched {
            manifest: DIGEST.to_owned(),
            files: [(PathBuf::from("/usr/local/bin/etcd"), "ab".to_owned())].into(),
            downloaded: 3,
            unchanged: true,
        };
        assert_eq!(
            render(&fetched, Output::Text).expect("text"),
            "already in place: /usr/local/bin/etcd (sha256 ab)\n"
        );
        let json: fetch::Fetched =
            serde_json::from_str(&render(&fetched, Output::Json).expect("json")).expect("parse");
        assert_eq!(json, fetched);
    }
}
