//! `kk-bundle`: builds offline kk bundles from a manifest.

mod cli;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use kk_bundle::build::{BuildOptions, BuildReport, build};
use kk_bundle::cache::Cache;
use kk_bundle::progress::Progress;

use cli::{CatalogArgs, Cli, Command, ConvertArgs, InspectArgs, KeygenArgs, Output, SignArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("KK_LOG");
    // Asked-for logs (`-v`, `KK_LOG`) say when each line happened, in seconds since the start,
    // which is where a slow step shows; the default progress lines stay as they are.
    let timed = cli.verbose > 0 || filter.is_ok();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter.unwrap_or_else(|_| cli.log_filter().into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    if timed {
        subscriber
            .with_timer(tracing_subscriber::fmt::time::Uptime::default())
            .init();
    } else {
        subscriber.without_time().init();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let quiet = cli.quiet;
    match cli.command {
        Command::Build(args) => {
            let options = BuildOptions {
                manifest: args.manifest,
                output: args.output_file,
                cache_dir: args.cache.unwrap_or_else(Cache::default_dir),
                jobs: args.jobs,
                locked: args.locked,
                lock_path: args.lock,
                split_size: args.split_size,
                platforms: args.platforms,
                allow_missing_platforms: args.allow_missing_platforms,
                allow_missing_chart_images: args.allow_missing_chart_images,
                level: args.level,
                since: args.since,
                kubekey: kubekey_options(args.os_repository),
                signing_key: args
                    .sign
                    .as_deref()
                    .map(kk_bundle::sign::load_signing_key)
                    .transpose()?,
            };
            let runtime =
                tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
            let progress = if quiet {
                Progress::hidden()
            } else {
                Progress::new()
            };
            let report = runtime
                .block_on(build(&options, &progress))
                .with_context(|| {
                    format!(
                        "cannot build a bundle from `{}`",
                        options.manifest.display()
                    )
                })?;
            print(&summary(&report))
        }
        Command::Inspect(args) => inspect(&args),
        Command::Catalog(args) => catalog(&args),
        Command::Keygen(args) => keygen(&args),
        Command::Convert(args) => convert(&args),
        Command::Sign(args) => sign(&args),
    }
}

fn kubekey_options(os_repositories: Vec<(String, String)>) -> kk_bundle::kubekey::Options {
    kk_bundle::kubekey::Options {
        os_repositories: os_repositories.into_iter().collect(),
    }
}

fn convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let path = &args.manifest;
    let context = || format!("cannot convert `{}`", path.display());
    let text = std::fs::read_to_string(path)
        .map_err(|source| kk_bundle::kubekey::KubeKeyError::Read {
            path: path.clone(),
            source,
        })
        .with_context(context)?;
    let options = kubekey_options(args.os_repository.clone());
    let conversion = kk_bundle::kubekey::convert(&text, &path.display().to_string(), &options)
        .with_context(context)?;
    for warning in &conversion.warnings {
        eprintln!("warning: {warning}");
    }
    let converted = conversion.manifest.source();
    match &args.output_file {
        Some(file) => std::fs::write(file, converted)
            .with_context(|| format!("cannot write `{}`", file.display())),
        None => print(converted),
    }
}

fn keygen(args: &KeygenArgs) -> anyhow::Result<()> {
    let passphrase = kk_bundle::passphrase::read_passphrase(true)?;
    let files =
        kk_bundle::keygen::keygen(&args.output_key_prefix, passphrase.as_bytes(), args.force)
            .context("cannot write a key pair")?;
    print(&format!(
        "private key        {}\npublic key         {}\nfingerprint        {}\n",
        files.private_key.display(),
        files.public_key.display(),
        files.fingerprint
    ))
}

fn sign(args: &SignArgs) -> anyhow::Result<()> {
    let bundle = args.bundle.path();
    let key = kk_bundle::sign::load_signing_key(&args.key)?;
    let report = kk_bundle::sign::sign_existing(bundle, &key)
        .with_context(|| format!("cannot sign `{}`", bundle.display()))?;
    let embedded = if report.embedded {
        "embedded, and "
    } else {
        "a split bundle keeps its parts: "
    };
    print(&format!(
        "signed `{}` with key {}: {embedded}written to `{}`\n",
        bundle.display(),
        report.fingerprint,
        report.sidecar.display()
    ))
}

fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let bundle = args.bundle.path();
    let context = || format!("cannot inspect `{}`", bundle.display());
    if args.sbom {
        let sbom = bundle_spec::inspect::inspect_sbom(bundle).with_context(context)?;
        return print_bytes(&[sbom.as_slice(), b"\n"].concat());
    }
    match args.output {
        Output::Text => print(&bundle_spec::inspect::inspect_text(bundle).with_context(context)?),
        Output::Json => print(&format!(
            "{:#}\n",
            bundle_spec::inspect::inspect_json(bundle).with_context(context)?
        )),
    }
}

fn catalog(args: &CatalogArgs) -> anyhow::Result<()> {
    // The same parser as for manifests checks the version, runtime, CNI, mode, storage and
    // addons.
    let quoted = |names: &[String]| -> String {
        let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
        quoted.join(", ")
    };
    let components = args
        .component
        .iter()
        .map(|pair| {
            let (name, version) = pair.split_once('=').with_context(|| {
                format!("--component `{pair}` is not NAME=VERSION, e.g. `containerd=2.1.9`")
            })?;
            Ok(format!("\"{name}\": \"{version}\""))
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    let text = format!(
        "apiVersion: {}\nkind: {}\nmetadata: {{name: catalog}}\nspec:\n  kubernetes: {{version: \"{}\", containerRuntime: \"{}\", cni: \"{}\", multiCni: \"{}\", kubeProxyMode: \"{}\", storage: [{}], addons: [{}], components: {{{}}}}}\n",
        bundle_spec::manifest::API_VERSION,
        bundle_spec::manifest::KIND,
        args.version,
        args.runtime,
        args.cni,
        args.multi_cni,
        args.kube_proxy_mode,
        quoted(&args.storage),
        quoted(&args.addon),
        components.join(", ")
    );
    let manifest = bundle_spec::manifest::Manifest::from_str_named(&text, "command line")?;
    let kubernetes = manifest
        .spec()
        .kubernetes
        .as_ref()
        .context("no kubernetes section")?;
    let expansion = kk_bundle::catalog::Catalog::builtin().expand(kubernetes)?;
    match args.output {
        Output::Text => print(&expansion.render_text()),
        Output::Json => print(&format!("{:#}\n", expansion.to_json())),
    }
}

/// The final table of a build.
fn summary(report: &BuildReport) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;
    let size = |bytes: u64| bytesize::ByteSize(bytes).to_string();
    let mut kinds: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for artifact in &report.artifacts {
        let entry = kinds.entry(artifact.kind.to_string()).or_default();
        entry.0 += 1;
        entry.1 += artifact.size;
    }
    let mut out = String::new();
    let _ = writeln!(out, "{:<10} {:>9} {:>12}", "KIND", "ENTRIES", "SIZE");
    for (kind, (count, bytes)) in &kinds {
        let _ = writeln!(out, "{kind:<10} {count:>9} {:>12}", size(*bytes));
    }
    let platforms: Vec<String> = report.platforms.iter().map(ToString::to_string).collect();
    let files: Vec<String> = report
        .written
        .output
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let _ = writeln!(out, "\nplatforms          {}", platforms.join(", "));
    let _ = writeln!(
        out,
        "content            {} before dedup, {} after",
        size(report.size_before_dedup),
        size(report.size_after_dedup)
    );
    let _ = writeln!(
        out,
        "bundle             {} ({})",
        size(report.written.output.size),
        files.join(", ")
    );
    let _ = writeln!(out, "identity           {}", report.written.identity);
    if report.written.signature.is_some() {
        let _ = writeln!(
            out,
            "signature          embedded, and `{}`",
            bundle_spec::sign::verify::sidecar_path(&report.written.output.paths[0]).display()
        );
    }
    let _ = writeln!(out, "lock               {}", report.lock_path.display());
    let _ = writeln!(
        out,
        "time               {:.1}s",
        report.elapsed.as_secs_f64()
    );
    out
}

fn print(text: &str) -> anyhow::Result<()> {
    print_bytes(text.as_bytes())
}

/// Writes `bytes` to stdout as they are (an SBOM is printed as stored).
fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .context("cannot write to stdout")
}
