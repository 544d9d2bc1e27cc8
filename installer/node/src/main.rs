//! `kk-node`: the command line of kk's node agent (see the library).

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    let cli = kk_node::cli::Cli::parse();
    let out = kk_node::cli::run(&cli)?;
    std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes())?;
    Ok(())
}
