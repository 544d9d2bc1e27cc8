//! `kk-bundle`: builds offline kk bundles from a manifest.

mod cli;

use clap::Parser;

fn main() {
    // No subcommands yet: parsing answers --help and --version, and rejects anything else.
    let _cli = cli::Cli::parse();
}
