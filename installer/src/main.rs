//! `kk-install`: verifies kk bundles and installs Kubernetes in an airgap.

mod cli;
mod nodes;
mod tls;
mod unpack;

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use bundle_spec::Bundle;
use clap::Parser as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use cli::{Cli, Command, Output, RegistryCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let Some(command) = cli.command else {
        return nodes::install(&cli.install, &cli.reach);
    };
    match command {
        Command::Precheck(args) => nodes::precheck(&args, &cli.reach),
        Command::Plan(args) => nodes::plan(&args),
        Command::Reset(args) => nodes::reset(&args, &cli.reach),
        Command::Fetch(args) => fetch(&args),
        Command::Verify(args) => {
            let started = Instant::now();
            let path = &args.bundle.bundle;
            let mut bundle = open(path)?;
            if let Some(store) = &args.store {
                kk_install::registry::check_base(&bundle, store).with_context(|| {
                    format!("bundle `{}` cannot go into this store", path.display())
                })?;
            }
            let bar = progress(bundle.content_size());
            let verified = bundle
                .walk(&mut Counting(bar.clone()))
                .with_context(|| format!("bundle `{}` is not intact", path.display()))?;
            bar.finish_and_clear();
            print(&format!(
                "ok: {} members, {} verified in {:.1}s; identity {}\n{}",
                verified.members,
                bytesize::ByteSize(verified.bytes),
                started.elapsed().as_secs_f64(),
                bundle.identity(),
                delta_note(&bundle, args.store.is_some())
            ))
        }
        Command::Inspect(args) => inspect(&args),
        Command::Registry(RegistryCommand::Serve(args)) => serve(&args),
        Command::Registry(RegistryCommand::Push(args)) => push(&args),
        Command::Registry(RegistryCommand::Ping(args)) => {
            let wait = std::time::Duration::from_secs(args.wait);
            tokio::runtime::Runtime::new()
                .context("cannot start the async runtime")?
                .block_on(kk_install::fetch::ping(&args.registry, &args.ca, wait))
                .with_context(|| format!("registry `{}` is not ready", args.registry))?;
            print(&format!("ok: {} answers over TLS\n", args.registry))
        }
        Command::Registry(RegistryCommand::Cert(args)) => {
            let issued = tls::issue(&args.ca_out, &args.names)?;
            print(&format!(
                "CA          {}\ncertificate {}\nkey         {}\n",
                issued.ca_cert.display(),
                issued.cert.display(),
                issued.key.display()
            ))
        }
        Command::Unpack(args) => unpack_into(&args.bundle.bundle, &args.store),
    }
}

/// `kk-install inspect`: the bundle's header, or with `--sbom` its SBOM, without unpacking it.
fn inspect(args: &cli::InspectArgs) -> anyhow::Result<()> {
    let path = &args.bundle.bundle;
    let context = || format!("cannot inspect `{}`", path.display());
    if args.sbom {
        let sbom = bundle_spec::inspect::inspect_sbom(path).with_context(context)?;
        return print_bytes(&[sbom.as_slice(), b"\n"].concat());
    }
    match args.output {
        Output::Text => print(&bundle_spec::inspect::inspect_text(path).with_context(context)?),
        Output::Json => print(&format!(
            "{:#}\n",
            bundle_spec::inspect::inspect_json(path).with_context(context)?
        )),
    }
}

/// `kk-install fetch`: on a node, a binary from kk's registry into a directory.
fn fetch(args: &cli::FetchArgs) -> anyhow::Result<()> {
    let request = kk_install::fetch::FetchRequest {
        registry: args.registry.clone(),
        ca: args.ca.clone(),
        reference: args.reference.clone(),
        expect: args.expect.clone(),
        into: args.into.clone(),
        files: args.files.clone(),
        stamp_dir: kk_install::fetch::STAMP_DIR.into(),
    };
    let fetched = tokio::runtime::Runtime::new()
        .context("cannot start the async runtime")?
        .block_on(kk_install::fetch::fetch(&request))
        .with_context(|| format!("cannot fetch `{}` from `{}`", args.reference, args.registry))?;
    match args.output {
        Output::Json => print(&format!("{}\n", serde_json::to_string(&fetched)?)),
        Output::Text => {
            let verb = if fetched.unchanged {
                "already in place"
            } else {
                "installed"
            };
            let mut text = String::new();
            for (path, sha) in &fetched.files {
                let _ = writeln!(text, "{verb}: {} (sha256 {sha})", path.display());
            }
            print(&text)
        }
    }
}

/// Verifies `bundle` while unpacking it into `store`, and reports what it did.
fn unpack_into(path: &std::path::Path, store: &std::path::Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut bundle = open(path)?;
    let bar = progress(bundle.content_size());
    let unpacked = unpack::unpack(&mut bundle, store, &bar).with_context(|| {
        format!(
            "cannot unpack `{}` into `{}`",
            path.display(),
            store.display()
        )
    })?;
    bar.finish_and_clear();
    print(&format!(
        "unpacked {} members ({} verified) into {} in {:.1}s: {} blobs written, {} already present; identity {}\n",
        unpacked.verified.members,
        bytesize::ByteSize(unpacked.verified.bytes),
        store.display(),
        started.elapsed().as_secs_f64(),
        unpacked.written,
        unpacked.skipped,
        bundle.identity()
    ))
}

/// The store of `source`, after unpacking its bundle into it when one is given.
fn filled_store(source: &cli::StoreSource) -> anyhow::Result<kk_install::registry::Store> {
    if let Some(bundle) = &source.bundle {
        unpack_into(bundle, &source.store)?;
    }
    kk_install::registry::Store::open(&source.store)
        .with_context(|| format!("cannot read the store `{}`", source.store.display()))
}

/// `registry push`: the store into an existing registry.
fn push(args: &cli::PushArgs) -> anyhow::Result<()> {
    let credentials = match (&args.username, &args.password_env) {
        (Some(username), Some(variable)) => Some(kk_install::push::Credentials {
            username: username.clone(),
            password: std::env::var(variable).with_context(|| {
                format!("environment variable `{variable}` (the password) is not set")
            })?,
        }),
        _ => None,
    };
    let target = kk_install::push::PushTarget {
        host: args.to.clone(),
        plain_http: args.plain_http,
        allow_plain_http_password: args.allow_plain_http_password,
        ca_file: args.ca.clone(),
        credentials,
    };
    // Refused before a bundle is unpacked for nothing.
    target.check()?;
    let store = filled_store(&args.source)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let report = runtime
        .block_on(kk_install::push::push(&store, &target, args.jobs))
        .with_context(|| {
            format!(
                "cannot push `{}` to `{}`",
                args.source.store.display(),
                args.to
            )
        })?;
    print(&format!(
        "pushed {} repositories, {} manifests to {}: {} blobs uploaded ({}), {} mounted, {} already there\n",
        report.repositories,
        report.manifests,
        args.to,
        report.blobs_uploaded,
        bytesize::ByteSize(report.bytes_uploaded),
        report.blobs_mounted,
        report.blobs_present
    ))
}

/// `registry serve`: the store over HTTP, or HTTPS with rustls when given a certificate.
fn serve(args: &cli::ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KK_LOG").unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let store = filled_store(&args.source)?;
    let served = args.source.store.display();
    let app = kk_install::registry::router(store).into_make_service();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // Without TCP_NODELAY the last small segment of a response waits for the client's delayed
    // ACK (up to 40 ms on Linux): one client pulling a layer would see that on every blob.
    let no_delay = axum_server::accept::NoDelayAcceptor;
    runtime.block_on(async {
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            let config = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
                .await
                .with_context(|| {
                    format!("cannot load `{}` and `{}`", cert.display(), key.display())
                })?;
            tracing::info!("serving {served} on https://{}", args.listen);
            let tls = axum_server::tls_rustls::RustlsAcceptor::new(config).acceptor(no_delay);
            axum_server::bind(args.listen)
                .acceptor(tls)
                .serve(app)
                .await
                .context("the registry stopped")
        } else {
            tracing::info!("serving {served} on http://{}", args.listen);
            axum_server::bind(args.listen)
                .acceptor(no_delay)
                .serve(app)
                .await
                .context("the registry stopped")
        }
    })
}

pub(crate) fn open(path: &std::path::Path) -> anyhow::Result<Bundle> {
    Bundle::open(path).with_context(|| format!("cannot open bundle `{}`", path.display()))
}

/// The bundle with every member header read: the node commands act on its header alone, and
/// refuse before any node is touched a bundle whose members lie about their sizes.
pub(crate) fn open_listed(path: &std::path::Path) -> anyhow::Result<Bundle> {
    Bundle::open_listed(path).with_context(|| format!("cannot open bundle `{}`", path.display()))
}

/// A bar with bytes/s on a terminal; nothing otherwise (the final line reports).
fn progress(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("[{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Reads every member, counting bytes for the progress bar.
struct Counting(ProgressBar);

impl bundle_spec::read::MemberVisitor for Counting {
    type Pending = ();

    fn receive(
        &mut self,
        _: &bundle_spec::MemberHeader,
        data: &mut dyn std::io::Read,
    ) -> Result<(), bundle_spec::BundleError> {
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            match data.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => self.0.inc(n as u64),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(bundle_spec::BundleError::from_read_error(e)),
            }
        }
    }

    fn accept(
        &mut self,
        _: &bundle_spec::MemberHeader,
        (): (),
        _: bundle_spec::Sha256Digest,
    ) -> Result<(), bundle_spec::BundleError> {
        Ok(())
    }
}

pub(crate) fn print(text: &str) -> anyhow::Result<()> {
    print_bytes(text.as_bytes())
}

/// Writes `bytes` to stdout as they are (an SBOM is printed as stored).
fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .context("cannot write to stdout")
}

/// What `verify` adds for a delta bundle: the base it needs, and whether the store was checked.
fn delta_note(bundle: &Bundle, store_checked: bool) -> String {
    let Some(base) = bundle.base() else {
        return String::new();
    };
    let checked = if store_checked {
        "all of them are in the store"
    } else {
        "pass --store to check a store for them"
    };
    format!(
        "delta: builds on bundle {}, takes {} blobs from it; {checked}\n",
        base.identity,
        base.blobs.len()
    )
}
