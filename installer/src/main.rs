//! `kk-install`: verifies kk bundles and installs Kubernetes in an airgap.

mod cli;

use clap::Parser;

fn main() {
    // No subcommands yet: parsing answers --help and --version, and rejects anything else.
    let _cli = cli::Cli::parse();
}
