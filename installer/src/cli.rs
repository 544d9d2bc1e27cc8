//! Command line of `kk-install`.

use clap::Parser;

/// Verifies a kk bundle and installs Kubernetes from it in an airgap.
///
/// kk-install runs on the disconnected side, with nothing but the bundle file (or its parts): it opens and
/// verifies the bundle, checks the nodes, and installs the cluster from the bundle's content.
#[derive(Debug, Parser)]
#[command(name = "kk-install", version, arg_required_else_help = true)]
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
        assert_eq!(cmd.get_name(), "kk-install");
        assert_eq!(cmd.get_version(), Some(env!("CARGO_PKG_VERSION")));
        assert!(
            cmd.get_about()
                .is_some_and(|about| !about.to_string().is_empty()),
            "kk-install needs an about text"
        );
    }
}
