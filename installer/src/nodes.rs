//! `kk-install precheck` and the install itself (`kk-install --bundle B -i inventory.yaml`):
//! reading the inventory and config, reaching the nodes, and printing what was found.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use kk_install::cluster::{self, Reach};
use kk_install::hooks::{self, Hook};
use kk_install::inventory::{Config, Inventory};
use kk_install::precheck::{self, Context, Report};
use kk_install::ssh::{HostKeyPolicy, Node};

use crate::cli::{CheckOptions, Output, ReachArgs};

/// What every node command reads first.
struct Plan {
    inventory: Inventory,
    config: Config,
    bundle: bundle_spec::Bundle,
    reach: Reach,
}

impl Plan {
    fn read(
        bundle: &Path,
        inventory: &Path,
        config: Option<&Path>,
        reach: &ReachArgs,
    ) -> anyhow::Result<Self> {
        let inventory = Inventory::from_path(inventory)?;
        for warning in inventory.warnings() {
            eprintln!("warning: {warning}");
        }
        let config = match config {
            Some(path) => Config::from_path(path)?,
            None => Config::default(),
        };
        for warning in config.warnings() {
            eprintln!("warning: {warning}");
        }
        let bundle = crate::open(bundle)?;
        let known_hosts = reach.known_hosts.clone().unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("/root"), PathBuf::from)
                .join(".ssh/known_hosts")
        });
        Ok(Self {
            inventory,
            config,
            bundle,
            reach: Reach {
                host_keys: HostKeyPolicy {
                    known_hosts,
                    accept_new: reach.accept_new_host_keys,
                },
                concurrency: reach.concurrency,
                work_dir: reach.work_dir.clone(),
            },
        })
    }

    /// Gathers facts and measurements from the connected `nodes` and evaluates every rule.
    async fn precheck(&self, nodes: &[Node], checks: &CheckOptions) -> anyhow::Result<Report> {
        let facts = cluster::gather(nodes, &self.reach).await?;
        let measured = cluster::measure(
            &self.inventory,
            &self.config,
            nodes,
            &facts,
            &checks.fio_size,
        )
        .await;
        let bundle = cluster::bundle_facts(&self.bundle);
        let context = Context {
            inventory: &self.inventory,
            config: &self.config,
            facts: &facts,
            bundle: &bundle,
            cluster: &measured,
        };
        let ignore: BTreeSet<String> = checks.ignore.iter().cloned().collect();
        Ok(precheck::evaluate(&context, &ignore))
    }
}

/// `kk-install precheck`: prints the report; fails if any check failed.
pub(crate) fn precheck(args: &crate::cli::PrecheckArgs, reach: &ReachArgs) -> anyhow::Result<()> {
    let plan = Plan::read(&args.bundle, &args.inventory, args.config.as_deref(), reach)?;
    let report = runtime()?.block_on(async {
        let nodes = cluster::connect(&plan.inventory, &plan.reach).await?;
        let report = plan.precheck(&nodes, &args.checks).await;
        close(nodes).await;
        report
    })?;
    match args.output {
        Output::Text => crate::print(&report.render_table())?,
        Output::Json => crate::print(&format!("{:#}\n", report.to_json()))?,
    }
    fail_on(&report)
}

/// The install: `pre_hook` → precheck → `post_hook`. The phases between precheck and `post_hook`
/// (PKI, registry, etcd, runtime, Kubernetes) are not part of kk-install yet, and it says so.
pub(crate) fn install(args: &crate::cli::InstallArgs, reach: &ReachArgs) -> anyhow::Result<()> {
    let (Some(bundle), Some(inventory)) = (&args.bundle, &args.inventory) else {
        bail!("the install needs `--bundle` and `-i/--inventory`; see `kk-install --help`");
    };
    let plan = Plan::read(bundle, inventory, args.config.as_deref(), reach)?;
    let work_dir = &plan.reach.work_dir;
    let concurrency = plan.reach.concurrency;
    runtime()?.block_on(async {
        let nodes = cluster::connect(&plan.inventory, &plan.reach).await?;
        let result = async {
            let ran = hooks::run(Hook::Pre, &nodes, work_dir, concurrency).await?;
            crate::print(&hook_summary("pre_hook", &ran))?;
            let report = plan.precheck(&nodes, &args.checks).await?;
            crate::print(&report.render_table())?;
            fail_on(&report)?;
            crate::print(
                "the install phases (init, image registry, etcd, container runtime, Kubernetes) \
                 are not part of kk-install yet: nothing was installed\n",
            )?;
            let ran = hooks::run(Hook::Post, &nodes, work_dir, concurrency).await?;
            crate::print(&hook_summary("post_hook", &ran))
        }
        .await;
        close(nodes).await;
        result
    })
}

fn hook_summary(name: &str, ran: &[hooks::HookRun]) -> String {
    let count: usize = ran.iter().map(|r| r.scripts.len()).sum();
    format!("{name}: {count} scripts on {} nodes\n", ran.len())
}

fn fail_on(report: &Report) -> anyhow::Result<()> {
    if report.failed() {
        bail!(
            "the precheck failed: fix what the table marks `fail`, or waive a check with `--ignore ID`"
        );
    }
    Ok(())
}

async fn close(nodes: Vec<Node>) {
    for node in nodes {
        node.close().await;
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().context("cannot start the async runtime")
}
