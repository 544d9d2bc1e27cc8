//! Command line of `kk-bundle`.

use std::path::PathBuf;

use bundle_spec::platform::Platform;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Builds one offline bundle file from a Kubernetes-style manifest.
///
/// kk-bundle runs on the connected side: it resolves everything the manifest names (container images,
/// binaries, Helm charts), fetches it, and writes a single verifiable bundle that `kk-install` reads in the
/// airgap.
#[derive(Debug, Parser)]
#[command(name = "kk-bundle", version, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Say more on stderr, repeatable: `-v` debug messages, `-vv` everything (`KK_LOG` overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", help_heading = "Global options")]
    pub(crate) verbose: u8,
    /// Only warnings and errors on stderr: no progress bar, no progress lines.
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub(crate) quiet: bool,
}

impl Cli {
    /// The tracing filter `-v`/`-q` ask for.
    pub(crate) fn log_filter(&self) -> &'static str {
        match (self.quiet, self.verbose) {
            (true, _) => "warn",
            (false, 0) => "info",
            (false, 1) => "debug",
            (false, _) => "trace",
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Resolves, fetches and writes everything a manifest names into one bundle.
    Build(BuildArgs),
    /// Shows what a bundle holds, from its header (no full decompression).
    Inspect(InspectArgs),
    /// Prints what a Kubernetes version expands to.
    Catalog(CatalogArgs),
    /// Makes a key pair for signing bundles, in cosign's files (`cosign.key`, `cosign.pub`).
    ///
    /// The pair is ECDSA P-256, as `cosign generate-key-pair` makes it: `<PREFIX>.key` holds the
    /// private key encrypted under a passphrase (mode 0600), `<PREFIX>.pub` the public key. cosign
    /// reads both.
    ///
    /// The passphrase comes from the environment variable `COSIGN_PASSWORD` (set and empty: no
    /// passphrase) or, when it is unset, is asked twice on the terminal; it is never an argument.
    Keygen(KeygenArgs),
    /// Prints the kk manifest equivalent to a KubeKey v3 manifest, and what it does not carry.
    ///
    /// Reads KubeKey's `apiVersion: kubekey.kubesphere.io/v1alpha2`, `kind: Manifest`; each part
    /// kk does not carry as KubeKey did is a warning on stderr with its line. `kk-bundle build`
    /// accepts the KubeKey manifest itself too, converting it the same way.
    Convert(ConvertArgs),
    /// Signs a bundle: verifies it, embeds a Sigstore signature over its checksum list and
    /// writes it beside it as `<bundle>.sigstore.json` (a split bundle gets only the latter).
    Sign(SignArgs),
}

#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The bundle manifest (YAML), or a KubeKey v3 `kind: Manifest`, read as `kk-bundle convert`
    /// converts it.
    pub(crate) manifest: PathBuf,
    /// Where to write the bundle (a file; `--output` is a format in every command that has it).
    #[arg(
        short = 'o',
        long = "output-file",
        value_name = "FILE",
        default_value = "cluster.tar.zst"
    )]
    pub(crate) output_file: PathBuf,
    /// The content-addressed download cache [default: the user's cache dir, `kk-bundle/`].
    #[arg(long)]
    pub(crate) cache: Option<PathBuf>,
    /// How many downloads run at once.
    #[arg(short = 'j', long, default_value_t = 8)]
    pub(crate) jobs: usize,
    /// Rebuild exactly from the lock file; fail if upstream drifted.
    #[arg(long)]
    pub(crate) locked: bool,
    /// The lock file [default: `<manifest stem>.lock.yaml` beside the manifest].
    #[arg(long)]
    pub(crate) lock: Option<PathBuf>,
    /// Split the bundle into parts of at most this size (e.g. `3.9GiB`; FAT32 holds < 4 GiB).
    #[arg(long, value_parser = parse_size)]
    pub(crate) split_size: Option<u64>,
    /// Bundle this platform instead of the manifest's (repeatable), e.g. `linux/arm64`.
    #[arg(long = "platform")]
    pub(crate) platforms: Vec<Platform>,
    /// Warn instead of failing when an image lacks a requested platform.
    #[arg(long)]
    pub(crate) allow_missing_platforms: bool,
    /// Warn instead of failing when a bundled chart, rendered with `helm template` as the install
    /// renders it, names an image the bundle lacks.
    #[arg(long)]
    pub(crate) allow_missing_chart_images: bool,
    /// zstd level for data that compresses (already-compressed data is stored uncompressed).
    #[arg(long, default_value_t = bundle_spec::write::DEFAULT_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub(crate) level: i32,
    /// Write a delta bundle on this previous bundle: only the blobs it (and the bundles it
    /// builds on) lacks; `kk-install` unpacks it onto a store that holds the previous bundle.
    #[arg(long, value_name = "PREVIOUS")]
    pub(crate) since: Option<PathBuf>,
    /// For a KubeKey v3 manifest: as `kk-bundle convert --os-repository`.
    #[arg(long, value_name = "DISTRO[/ARCH]=URL", value_parser = parse_os_repository)]
    pub(crate) os_repository: Vec<(String, String)>,
    /// Sign the bundle with this private key, as `kk-bundle sign` does.
    #[arg(long, value_name = "KEY")]
    pub(crate) sign: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SignArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArg,
    /// The private key to sign with: cosign's `cosign.key` (its passphrase from `COSIGN_PASSWORD`
    /// or the terminal), or a plain PKCS#8 or SEC1 PEM.
    #[arg(long, value_name = "KEY")]
    pub(crate) key: PathBuf,
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
pub(crate) struct CatalogArgs {
    /// A Kubernetes version, e.g. `v1.31.4`.
    pub(crate) version: String,
    /// The container runtime.
    #[arg(long, default_value = "containerd")]
    pub(crate) runtime: String,
    /// The CNI.
    #[arg(long, default_value = "calico")]
    pub(crate) cni: String,
    /// A secondary CNI over the first (`multus`: its manifest and image).
    #[arg(long, default_value = "none")]
    pub(crate) multi_cni: String,
    /// kube-proxy's mode (`ipvs` adds the IPVS tools to the packages).
    #[arg(long, default_value = "iptables")]
    pub(crate) kube_proxy_mode: String,
    /// A storage kind (`nfs`: its packages, chart and image); repeat for several.
    #[arg(long, value_name = "KIND")]
    pub(crate) storage: Vec<String>,
    /// An optional addon (`spegel`: its chart and image); repeat for several.
    #[arg(long, value_name = "NAME")]
    pub(crate) addon: Vec<String>,
    /// A component's version in place of the catalog's (`containerd=2.1.9`), as a manifest's
    /// `spec.kubernetes.components`; repeat for several.
    #[arg(long, value_name = "NAME=VERSION")]
    pub(crate) component: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Output::Text)]
    pub(crate) output: Output,
}

/// `kk-bundle keygen`: the same files and passphrase as `cosign generate-key-pair`.
#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
    /// Where to write the pair: `<PREFIX>.key` and `<PREFIX>.pub`.
    #[arg(long, value_name = "PREFIX", default_value = "cosign")]
    pub(crate) output_key_prefix: PathBuf,
    /// Replace an existing key pair of that name.
    #[arg(long)]
    pub(crate) force: bool,
}

/// `kk-bundle convert`: a KubeKey v3 manifest as the kk manifest it maps onto.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// The KubeKey v3 manifest (YAML).
    pub(crate) manifest: PathBuf,
    /// Write the kk manifest to this file instead of stdout.
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub(crate) output_file: Option<PathBuf>,
    /// The Debian-format repository for a release of `operatingSystems` (repeatable), e.g.
    /// `ubuntu-22.04=http://mirror.internal/ubuntu`; `ubuntu-22.04/arm64=URL` for one
    /// architecture. Without one, its `spec.osPackages` entry is written commented out.
    #[arg(long, value_name = "DISTRO[/ARCH]=URL", value_parser = parse_os_repository)]
    pub(crate) os_repository: Vec<(String, String)>,
}

/// The bundle a command reads: its first argument, or `--bundle B` (as `kk-install` takes it).
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

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// For people.
    Text,
    /// For programs.
    Json,
}

/// A `--split-size` its parser refuses (clap shows the message, naming the flag).
#[derive(Debug, thiserror::Error)]
#[error("`{value}` is not a size like `3.9GiB` or `700MB`: {reason}")]
struct InvalidSize {
    /// The value as given.
    value: String,
    /// What bytesize said of it.
    reason: String,
}

/// A `--os-repository` that is not `DISTRO[/ARCH]=URL` (clap shows the message, naming the
/// flag).
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not DISTRO[/ARCH]=URL, e.g. `ubuntu-22.04=http://mirror.internal/ubuntu`")]
struct InvalidOsRepository(String);

fn parse_os_repository(text: &str) -> Result<(String, String), InvalidOsRepository> {
    match text.split_once('=') {
        Some((distro, url)) if !distro.is_empty() && !url.is_empty() => {
            Ok((distro.to_owned(), url.to_owned()))
        }
        _ => Err(InvalidOsRepository(text.to_owned())),
    }
}

fn parse_size(text: &str) -> Result<u64, InvalidSize> {
    text.parse::<bytesize::ByteSize>()
        .map(|size| size.as_u64())
        .map_err(|reason| InvalidSize {
            value: text.to_owned(),
            reason,
        })
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::{CommandFactory, Parser as _};

    #[test]
    fn split_sizes_parse_and_a_bad_one_is_named() {
        assert_eq!(super::parse_size("700MB").expect("700MB"), 700_000_000);
        assert_eq!(super::parse_size("1KiB").expect("1KiB"), 1024);
        let error = super::parse_size("lots").expect_err("lots").to_string();
        assert!(
            error.starts_with("`lots` is not a size like `3.9GiB` or `700MB`: "),
            "{error}"
        );
    }

    #[test]
    fn os_repositories_parse_and_a_bad_one_is_named() {
        assert_eq!(
            super::parse_os_repository("ubuntu-22.04/arm64=http://m/ubuntu-ports").expect("valid"),
            (
                "ubuntu-22.04/arm64".to_owned(),
                "http://m/ubuntu-ports".to_owned()
            )
        );
        for bad in ["ubuntu-22.04", "=http://m", "ubuntu-22.04="] {
            let error = super::parse_os_repository(bad).expect_err(bad).to_string();
            assert!(
                error.starts_with(&format!("`{bad}` is not DISTRO[/ARCH]=URL")),
                "{error}"
            );
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn inspect_sbom_is_a_flag_that_excludes_an_output_format() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["kk-bundle", "inspect"], args].concat());
        let Ok(Cli {
            command: super::Command::Inspect(args),
            ..
        }) = parse(&["b.tar.zst", "--sbom"])
        else {
            panic!("`inspect --sbom` does not parse");
        };
        assert!(args.sbom);
        assert!(parse(&["b.tar.zst", "--sbom", "--output", "json"]).is_err());
    }

    /// The grammar shared with `kk-install`: a positional bundle or `--bundle`, `-o FILE` a
    /// file and `--output` a format, `-j` the parallelism, `-v`/`-q` on every command.
    #[test]
    fn one_grammar_with_kk_install() {
        for form in [&["b.tar.zst"][..], &["--bundle", "b.tar.zst"]] {
            let cli = Cli::try_parse_from([&["kk-bundle", "inspect"][..], form].concat())
                .unwrap_or_else(|e| panic!("{form:?}: {e}"));
            let super::Command::Inspect(args) = cli.command else {
                panic!("not inspect");
            };
            assert_eq!(args.bundle.path(), std::path::Path::new("b.tar.zst"));
        }
        let cli = Cli::try_parse_from([
            "kk-bundle",
            "build",
            "m.yaml",
            "-o",
            "c.tar.zst",
            "-j",
            "2",
            "-q",
        ])
        .expect("parses");
        let super::Command::Build(args) = &cli.command else {
            panic!("not build");
        };
        assert_eq!(args.output_file, std::path::Path::new("c.tar.zst"));
        assert_eq!(args.jobs, 2);
        assert_eq!(cli.log_filter(), "warn");
        assert!(
            Cli::try_parse_from(["kk-bundle", "build", "m.yaml", "--output", "json"]).is_err(),
            "`--output` is never a file"
        );
        let verbose =
            Cli::try_parse_from(["kk-bundle", "-vv", "catalog", "v1.33.0"]).expect("parses");
        assert_eq!(verbose.log_filter(), "trace");
    }

    /// `keygen` writes `cosign.key`/`cosign.pub` by default and takes no passphrase argument.
    #[test]
    fn keygen_takes_a_prefix_and_never_a_passphrase() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["kk-bundle", "keygen"], args].concat());
        let Ok(Cli {
            command: super::Command::Keygen(args),
            ..
        }) = parse(&[])
        else {
            panic!("`keygen` does not parse");
        };
        assert_eq!(args.output_key_prefix, std::path::Path::new("cosign"));
        assert!(!args.force);
        let Ok(Cli {
            command: super::Command::Keygen(args),
            ..
        }) = parse(&["--output-key-prefix", "keys/release", "--force"])
        else {
            panic!("`keygen --output-key-prefix --force` does not parse");
        };
        assert_eq!(args.output_key_prefix, std::path::Path::new("keys/release"));
        assert!(args.force);
        for passphrase in ["--passphrase", "--password"] {
            assert!(parse(&[passphrase, "x"]).is_err(), "{passphrase}");
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(super::parse_size("4096").unwrap(), 4096);
        assert_eq!(super::parse_size("1KiB").unwrap(), 1024);
        assert_eq!(super::parse_size("3.9GiB").unwrap(), 4_187_593_113);
        assert!(super::parse_size("big").is_err());
    }

    #[test]
    fn version_is_the_crate_version() {
        let cmd = Cli::command();
        assert_eq!(cmd.get_name(), "kk-bundle");
        assert_eq!(cmd.get_version(), Some(env!("CARGO_PKG_VERSION")));
        assert!(
            cmd.get_about()
                .is_some_and(|about| !about.to_string().is_empty()),
            "kk-bundle needs an about text"
        );
    }

    /// Every command's `--help`, pinned: a change to the grammar shows in the snapshot diff.
    #[test]
    fn help_of_every_command() {
        let mut cli = Cli::command().term_width(100);
        cli.build();
        let mut pages = Vec::new();
        help_pages(&mut cli, "kk-bundle", &mut pages);
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
