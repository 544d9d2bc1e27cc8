//! Command line of `kk-bundle`.

use clap::Parser;

/// Builds one offline bundle file from a Kubernetes-style manifest.
///
/// kk-bundle runs on the connected side: it resolves everything the manifest names (container images,
/// binaries, Helm charts), fetches it, and writes a single verifiable bundle that `kk-install` reads in the
/// airgap.
#[derive(Debug, Parser)]
#[command(name = "kk-bundle", version, arg_required_else_help = true)]
pub(crate) struct Cli {}

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
        assert_eq!(cmd.get_name(), "kk-bundle");
        assert_eq!(cmd.get_version(), Some(env!("CARGO_PKG_VERSION")));
        assert!(
            cmd.get_about()
                .is_some_and(|about| !about.to_string().is_empty()),
            "kk-bundle needs an about text"
        );
    }
}
