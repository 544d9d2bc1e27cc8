//! `kk-install upgrade` and `kk-install plan --upgrade`: the next bundle opened and planned as
//! an install, the upgrade planned from it and the work directory's install state, then run on
//! the nodes (or only printed).

use anyhow::Context as _;
use kk_install::cluster;
use kk_install::install::run::Checks;
use kk_install::install::upgrade::{self, Upgrade};
use kk_install::install::{Event, Plan, StateLock};
use tokio::runtime::Runtime;

use crate::cli::{ClusterArgs, Output, PlanArgs, UpgradeArgs};
use crate::nodes::{close, reach_of, read_files, report};

/// The data size of the etcd disk check the install's checks carry; the upgrade runs no fio.
const FIO_SIZE: &str = "22m";

/// `kk-install plan --upgrade`: the upgrade's steps per node, or kubeadm's refusal.
pub(crate) fn plan(args: &PlanArgs) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let (inventory, target) = target(cluster)?;
    let plan =
        upgrade::run::preview(&args.reach.work_dir, &target).context("cannot plan the upgrade")?;
    match cluster.output {
        Output::Text => crate::print(&plan.render(&inventory)),
        Output::Json => crate::print_json(&serde_json::to_value(&plan)?),
    }
}

/// The inventory and the install plan of the bundle upgraded to.
fn target(cluster: &ClusterArgs) -> anyhow::Result<(kk_install::inventory::Inventory, Plan)> {
    let (inventory, config) = read_files(&cluster.inventory, cluster.config.as_deref())?;
    let bundle = crate::bundles::open_listed(cluster.bundle.path())?;
    let target = Plan::new(&inventory, &config, bundle.identity(), bundle.description())
        .context("cannot plan the install of the bundle upgraded to")?;
    Ok((inventory, target))
}

/// `kk-install upgrade`: refused before any node is touched where kubeadm would refuse, then
/// every step on every node; the final table.
pub(crate) fn upgrade(runtime: &Runtime, args: &UpgradeArgs, quiet: bool) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let work_dir = &args.reach.work_dir;
    let (inventory, config) = read_files(&cluster.inventory, cluster.config.as_deref())?;
    let mut bundle = crate::bundles::open_listed(cluster.bundle.path())?;
    // Before any node is reached, as for the install (the config's keys are the install's).
    let trusted: Vec<std::path::PathBuf> = args
        .trust
        .trusted_keys
        .iter()
        .chain(&config.trusted_keys)
        .cloned()
        .collect();
    let signatures = crate::bundles::trust(&mut bundle, &trusted)?;
    if !quiet {
        eprint!("{}", crate::bundles::signature_lines(&signatures));
    }
    let target = Plan::new(&inventory, &config, bundle.identity(), bundle.description())
        .context("cannot plan the install of the bundle upgraded to")?;
    // What the states record is judged before any node is reached (a state without versions
    // is judged on the nodes' own versions by the run).
    match upgrade::run::preview(work_dir, &target) {
        Ok(_)
        | Err(upgrade::UpgradeError::Plan(upgrade::UpgradePlanError::UnknownVersion { .. })) => {}
        Err(error) => return Err(anyhow::Error::from(error).context("cannot plan the upgrade")),
    }
    let reach = reach_of(&args.reach);
    let installer_binary =
        std::env::current_exe().context("cannot find this kk-install's own file")?;
    let agent_binary = kk_install::agent::locate(&installer_binary, work_dir)?;
    let bundle_facts = cluster::bundle_facts(&bundle);
    let ignore = std::collections::BTreeSet::new();
    let run = Upgrade {
        target: &target,
        bundle_path: cluster.bundle.path(),
        installer_binary: &installer_binary,
        agent_binary: &agent_binary,
        checks: Checks {
            inventory: &inventory,
            config: &config,
            bundle: &bundle_facts,
            reach: &reach,
            fio_size: FIO_SIZE,
            ignore: &ignore,
        },
    };
    let report = |event: Event<'_>| report(event, quiet);
    let lock = StateLock::acquire(work_dir)?;
    let summary = runtime.block_on(async {
        let nodes = cluster::connect(&inventory, &reach).await?;
        let result = upgrade::run(&run, &lock, &nodes, &report).await;
        close(nodes).await;
        result.map_err(anyhow::Error::from)
    })?;
    match cluster.output {
        Output::Text => crate::print(&upgrade::run::render(&summary, &inventory)),
        Output::Json => crate::print_json(&serde_json::to_value(&summary)?),
    }
}
