//! `kk-install precheck`, `plan`, `reset`, `certs` and the install itself (`kk-install --bundle
//! B -i inventory.yaml`): reading the inventory and config, reaching the nodes, and printing what
//! was found.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, bail};
use kk_install::cluster::{self, Reach};
use kk_install::install::delete_node;
use kk_install::install::run::Checks;
use kk_install::install::{Event, Install, Phase, Plan, RunOptions, StateLock, StepStatus};
use kk_install::inventory::{Config, Inventory};
use kk_install::precheck::Report;
use kk_install::ssh::{HostKeyPolicy, Node};

use tokio::runtime::Runtime;

use crate::cli::{Output, ReachArgs};

/// What every node command reads first.
struct Cluster {
    inventory: Inventory,
    config: Config,
    bundle: bundle_spec::Bundle,
    reach: Reach,
}

impl Cluster {
    fn open(
        bundle: &Path,
        inventory: &Path,
        config: Option<&Path>,
        reach: &ReachArgs,
    ) -> anyhow::Result<Self> {
        let (inventory, config) = read_files(inventory, config)?;
        let bundle = crate::bundles::open_listed(bundle)?;
        Ok(Self {
            inventory,
            config,
            bundle,
            reach: reach_of(reach),
        })
    }
}

/// How nodes are reached, from the command line.
pub(crate) fn reach_of(reach: &ReachArgs) -> Reach {
    let known_hosts = reach.known_hosts.clone().unwrap_or_else(|| {
        std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from("/root"), PathBuf::from)
            .join(".ssh/known_hosts")
    });
    Reach {
        host_keys: HostKeyPolicy {
            known_hosts,
            accept_new: reach.accept_new_host_keys,
        },
        concurrency: reach.jobs,
        work_dir: reach.work_dir.clone(),
    }
}

/// The inventory and the config (defaults without one), their warnings printed; the private
/// key files the inventory names are checked here, before any command reaches a node.
pub(crate) fn read_files(
    inventory: &Path,
    config: Option<&Path>,
) -> anyhow::Result<(Inventory, Config)> {
    let inventory = Inventory::from_path(inventory)?;
    for warning in inventory.warnings() {
        eprintln!("warning: {warning}");
    }
    cluster::check_keys(&inventory)?;
    let config = match config {
        Some(path) => Config::from_path(path)?,
        None => Config::default(),
    };
    for warning in config.warnings() {
        eprintln!("warning: {warning}");
    }
    Ok((inventory, config))
}

/// `kk-install precheck`: prints the report; fails if any check failed.
pub(crate) fn precheck(runtime: &Runtime, args: &crate::cli::PrecheckArgs) -> anyhow::Result<()> {
    let cluster_args = &args.cluster;
    let read = Cluster::open(
        cluster_args.bundle.path(),
        &cluster_args.inventory,
        cluster_args.config.as_deref(),
        &args.reach,
    )?;
    let bundle_facts = cluster::bundle_facts(&read.bundle);
    let checks = Checks {
        inventory: &read.inventory,
        config: &read.config,
        bundle: &bundle_facts,
        reach: &read.reach,
        fio_size: &args.checks.fio_size,
        ignore: &args.checks.ignore.iter().cloned().collect(),
    };
    let report = runtime.block_on(async {
        let (nodes, facts) = cluster::connect_and_gather(&read.inventory, &read.reach).await?;
        let all: Vec<&Node> = nodes.iter().collect();
        let report = kk_install::install::run::precheck_judge(&checks, &all, &facts).await;
        close(nodes).await;
        Ok::<_, kk_install::ssh::SshError>(report)
    })?;
    match cluster_args.output {
        Output::Text => crate::print(&report.render_table())?,
        Output::Json => crate::print(&format!("{:#}\n", report.to_json()))?,
    }
    fail_on(&report)
}

/// `kk-install plan`: the steps per node, from the inventory, config and bundle alone.
pub(crate) fn plan(args: &crate::cli::PlanArgs) -> anyhow::Result<()> {
    let args = &args.cluster;
    let (inventory, config) = read_files(&args.inventory, args.config.as_deref())?;
    let bundle = crate::bundles::open_listed(args.bundle.path())?;
    let plan = Plan::new(&inventory, &config, bundle.identity(), bundle.description())
        .context("cannot plan the install")?;
    match args.output {
        Output::Text => crate::print(&plan.render(&inventory)),
        Output::Json => crate::print(&format!("{:#}\n", serde_json::to_value(&plan)?)),
    }
}

/// `kk-install reset`: the cluster taken off every node; one line per node.
pub(crate) fn reset(runtime: &Runtime, args: &crate::cli::ResetArgs) -> anyhow::Result<()> {
    if !args.yes {
        bail!(
            "reset removes Kubernetes and everything kk installed from every node of `{}`; hint: add `--yes` to go ahead",
            args.inventory.display()
        );
    }
    let (inventory, config) = read_files(&args.inventory, args.config.as_deref())?;
    let nfs_shares: std::collections::BTreeMap<String, String> = inventory
        .role_members(kk_install::inventory::Role::Nfs)
        .into_iter()
        .map(|host| (host.name.clone(), config.nfs.share_dir.clone()))
        .collect();
    let reach = reach_of(&args.reach);
    let lock = StateLock::acquire(&reach.work_dir)?;
    let done = runtime.block_on(async {
        let nodes = cluster::connect(&inventory, &reach).await?;
        let result = kk_install::install::reset::reset(
            &nodes,
            &reach.work_dir,
            &lock,
            args.purge,
            reach.concurrency,
            &nfs_shares,
        )
        .await;
        close(nodes).await;
        result.map_err(anyhow::Error::from)
    })?;
    let mut text = String::new();
    for (node, reset) in done {
        let _ = writeln!(
            text,
            "{node}: {}units removed [{}], {} files removed{}",
            if reset.kubeadm { "kubeadm reset, " } else { "" },
            reset.units.join(" "),
            reset.files,
            if reset.purged { ", data purged" } else { "" }
        );
    }
    crate::print(&text)
}

/// `kk-install delete-node`: one node taken out of the cluster; one line of what was done.
pub(crate) fn delete_node(
    runtime: &Runtime,
    args: &crate::cli::DeleteNodeArgs,
) -> anyhow::Result<()> {
    let (inventory, config) = read_files(&args.inventory, args.config.as_deref())?;
    // Refusals come before the confirmation: they need no node and say what to do instead.
    let deletion = delete_node::deletion(&inventory, &config, &args.name)?;
    if !args.yes {
        bail!(
            "delete-node drains `{}` and takes Kubernetes and everything kk installed off it; hint: add `--yes` to go ahead",
            args.name
        );
    }
    let reach = reach_of(&args.reach);
    let lock = StateLock::acquire(&reach.work_dir)?;
    let deleted = runtime.block_on(async {
        let nodes = cluster::connect(&inventory, &reach).await?;
        let result = delete_node::delete_node(&deletion, &nodes, &reach.work_dir, &lock).await;
        close(nodes).await;
        result.map_err(anyhow::Error::from)
    })?;
    let text = format!(
        "{node}: {kubernetes}{etcd}units removed [{units}], {files} files removed, /etc/hosts changed on [{hosts}]{state}\n\
         hint: remove `{node}` from `{inventory}` now\n",
        node = args.name,
        kubernetes = if deleted.kubernetes {
            "drained and deleted, "
        } else {
            ""
        },
        etcd = if deleted.etcd {
            "removed from etcd, "
        } else {
            ""
        },
        units = deleted.reset.units.join(" "),
        files = deleted.reset.files,
        hosts = deleted.hosts.join(" "),
        state = if deleted.state {
            ", forgotten in the install state"
        } else {
            ""
        },
        inventory = args.inventory.display(),
    );
    crate::print(&text)
}

/// The install: every phase of the plan on every node; the final table.
pub(crate) fn install(
    runtime: &Runtime,
    args: &crate::cli::InstallArgs,
    reach: &ReachArgs,
    quiet: bool,
) -> anyhow::Result<()> {
    let (Some(bundle_path), Some(inventory)) = (&args.bundle, &args.inventory) else {
        bail!("the install needs `--bundle` and `-i/--inventory`; see `kk-install --help`");
    };
    let state = kk_install::install::run::state_path(&reach.work_dir);
    // Refused before anything is read, created or connected: there is nothing to resume.
    if args.resume && !state.is_file() {
        bail!(
            "`--resume`: no install is recorded in `{}` (`{}` does not exist); hint: run without `--resume` to start one, or give the `--work-dir` of the install to continue",
            reach.work_dir.display(),
            state.display()
        );
    }
    let mut read = Cluster::open(bundle_path, inventory, args.config.as_deref(), reach)?;
    // Before any node is reached: a bundle the operator does not trust touches nothing.
    let trusted: Vec<PathBuf> = args
        .trust
        .trusted_keys
        .iter()
        .chain(&read.config.trusted_keys)
        .cloned()
        .collect();
    let signatures = crate::bundles::trust(&mut read.bundle, &trusted)?;
    if !quiet {
        eprint!("{}", crate::bundles::signature_lines(&signatures));
    }
    let plan = Plan::new(
        &read.inventory,
        &read.config,
        read.bundle.identity(),
        read.bundle.description(),
    )
    .context("cannot plan the install")?;
    let installer_binary =
        std::env::current_exe().context("cannot find this kk-install's own file")?;
    let agent_binary = kk_install::agent::locate(&installer_binary, &read.reach.work_dir)?;
    let bundle_facts = cluster::bundle_facts(&read.bundle);
    let ignore = args.checks.ignore.iter().cloned().collect();
    let install = Install {
        plan: &plan,
        bundle_path,
        installer_binary: &installer_binary,
        agent_binary: &agent_binary,
        checks: Checks {
            inventory: &read.inventory,
            config: &read.config,
            bundle: &bundle_facts,
            reach: &read.reach,
            fio_size: &args.checks.fio_size,
            ignore: &ignore,
        },
    };
    let options = RunOptions {
        phase: args.phase,
        resume: args.resume,
    };
    if args.resume && !quiet {
        eprintln!("resuming the install recorded in {}", state.display());
    }
    let report = |event: Event<'_>| report(event, quiet);
    let lock = StateLock::acquire(&read.reach.work_dir)?;
    let summary = runtime.block_on(async {
        let nodes = cluster::connect(&read.inventory, &read.reach).await?;
        let result =
            kk_install::install::run::run(&install, &lock, &nodes, &options, &report).await;
        close(nodes).await;
        result.map_err(anyhow::Error::from)
    })?;
    // A phase without steps in this plan (`push` with kk's registry) gets no column.
    let phases: Vec<Phase> = args.phase.map_or_else(
        || {
            Phase::ALL
                .into_iter()
                .filter(|phase| install.plan.phase(*phase).next().is_some())
                .collect()
        },
        |p| vec![p],
    );
    match args.output {
        Output::Text => crate::print(&summary.render(&read.inventory, &phases)),
        Output::Json => crate::print(&format!("{:#}\n", serde_json::to_value(&summary)?)),
    }
}

/// Progress for the operator: one line per step and node as it finishes, on stderr (not when
/// `quiet`; the precheck's table is a finding, shown always).
pub(crate) fn report(event: Event<'_>, quiet: bool) {
    match event {
        Event::Step(_) | Event::Note(_) if quiet => {}
        Event::Step(step) => {
            let status = match step.status {
                StepStatus::Changed => "changed",
                StepStatus::Unchanged => "ok",
                StepStatus::Done => "done before",
                StepStatus::Failed => "FAILED",
            };
            eprintln!(
                "[{:>3}/{}] {:<12} {:<20} {:<11} {:.1}s",
                step.finished, step.total, step.target, step.step, status, step.seconds
            );
        }
        Event::Precheck(report) => eprint!("{}", report.render_table()),
        Event::Note(text) => eprintln!("{text}"),
    }
}

fn fail_on(report: &Report) -> anyhow::Result<()> {
    if report.failed() {
        bail!(
            "the precheck failed: fix what the table marks `fail`, or waive a check with `--ignore ID`"
        );
    }
    Ok(())
}

pub(crate) async fn close(nodes: Vec<Node>) {
    for node in nodes {
        node.close().await;
    }
}

/// `kk-install certs check`: every certificate on every node, as a table or JSON.
pub(crate) fn certs_check(
    runtime: &Runtime,
    args: &crate::cli::CertsCheckArgs,
) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let (inventory, _config) = read_files(&cluster.inventory, cluster.config.as_deref())?;
    let reach = reach_of(&cluster.reach);
    let rows = runtime.block_on(async {
        let nodes = cluster::connect(&inventory, &reach).await?;
        let rows = kk_install::certs::check(&nodes, reach.concurrency, SystemTime::now()).await;
        close(nodes).await;
        rows.map_err(anyhow::Error::from)
    })?;
    match args.output {
        Output::Text => crate::print(&kk_install::certs::table::render(&rows)),
        Output::Json => crate::print(&format!("{:#}\n", serde_json::to_value(&rows)?)),
    }
}

/// `kk-install certs renew`: the renewal, one line per step in the order done, then a note for
/// each CA near its expiry.
pub(crate) fn certs_renew(
    runtime: &Runtime,
    args: &crate::cli::CertsRenewArgs,
) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let (inventory, _config) = read_files(&cluster.inventory, cluster.config.as_deref())?;
    let reach = reach_of(&cluster.reach);
    let dir = reach.work_dir.join("pki");
    if !dir.join("ca.crt").is_file() {
        bail!(
            "`{}` holds no master copy of the cluster's certificates; hint: give the `--work-dir` of the install",
            dir.display()
        );
    }
    let selection = kk_install::certs::plan::select(args.all, &args.names, |name| {
        kk_install::pki::holds(&dir, name)
    })?;
    let control_planes: Vec<String> = inventory
        .role_members(kk_install::inventory::Role::ControlPlane)
        .into_iter()
        .map(|host| host.name.clone())
        .collect();
    // An install running at the same time would copy the master copy's files while they change.
    let _lock = StateLock::acquire(&reach.work_dir)?;
    let done = runtime.block_on(async {
        let nodes = cluster::connect(&inventory, &reach).await?;
        let done =
            kk_install::certs::renew(&nodes, &control_planes, &dir, &selection, reach.concurrency)
                .await;
        close(nodes).await;
        done.map_err(anyhow::Error::from)
    })?;
    let mut text = String::new();
    for step in done {
        let _ = writeln!(text, "{}: {}", step.node, step.what);
    }
    for note in kk_install::certs::ca_notes(&dir, SystemTime::now())? {
        let _ = writeln!(text, "note: {note}");
    }
    crate::print(&text)
}
