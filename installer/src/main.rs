//! `kk-install`: verifies kk bundles and installs Kubernetes in an airgap.
//!
//! This file parses the command line, starts tracing and the async runtime once, and hands each
//! command to the module that runs it: [`bundles`] (verify, inspect, unpack), [`nodes`] (the
//! install, precheck, plan, reset, certs), [`upgrade`] (the upgrade and its plan), [`serving`] (the registry commands, and `fetch` on a
//! node).

mod bundles;
mod cli;
mod nodes;
mod serving;
mod tls;
mod upgrade;

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use tokio::runtime::Runtime;

use cli::{CertsCommand, Cli, Command, Level, RegistryCommand, Verbosity};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server's log is its output; other commands print their result and log only warnings.
    let usual = match cli.command {
        Some(Command::Registry(RegistryCommand::Serve(_))) => Level::Info,
        _ => Level::Warn,
    };
    init_tracing(cli.verbosity, usual);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Log lines on stderr at the level `-v`/`-q` ask for (`KK_LOG` overrides them).
fn init_tracing(verbosity: Verbosity, usual: Level) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KK_LOG")
                .unwrap_or_else(|_| verbosity.filter(usual).into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = Runtime::new().context("cannot start the async runtime")?;
    let quiet = cli.verbosity.quiet;
    let Some(command) = cli.command else {
        return nodes::install(&runtime, &cli.install, &cli.reach, quiet);
    };
    match command {
        Command::Precheck(args) => nodes::precheck(&runtime, &args),
        Command::Plan(args) if args.upgrade => upgrade::plan(&args),
        Command::Plan(args) => nodes::plan(&args),
        Command::Reset(args) => nodes::reset(&runtime, &args),
        Command::Fetch(args) => serving::fetch(&runtime, &args),
        Command::Verify(args) => bundles::verify(&args, quiet),
        Command::Inspect(args) => bundles::inspect(&args),
        Command::Unpack(args) => bundles::unpack(&args, quiet),
        Command::Registry(RegistryCommand::Serve(args)) => serving::serve(&runtime, &args, quiet),
        Command::Registry(RegistryCommand::Push(args)) => serving::push(&runtime, &args, quiet),
        Command::Registry(RegistryCommand::Ping(args)) => serving::ping(&runtime, &args),
        Command::Registry(RegistryCommand::Cert(args)) => serving::cert(&args),
        Command::Registry(RegistryCommand::Revisions(args)) => serving::revisions(&args),
        Command::Registry(RegistryCommand::Prune(args)) => serving::prune(&args),
        Command::Certs(CertsCommand::Check(args)) => nodes::certs_check(&runtime, &args),
        Command::Certs(CertsCommand::Renew(args)) => nodes::certs_renew(&runtime, &args),
        Command::Upgrade(args) => upgrade::upgrade(&runtime, &args, quiet),
    }
}

/// Writes `text` to stdout.
pub(crate) fn print(text: &str) -> anyhow::Result<()> {
    print_bytes(text.as_bytes())
}

/// Writes `value` to stdout as pretty JSON, with a final newline.
pub(crate) fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    print(&format!("{value:#}\n"))
}

/// Writes `bytes` to stdout as they are (an SBOM is printed as stored).
pub(crate) fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .context("cannot write to stdout")
}
