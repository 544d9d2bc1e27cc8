//! End-to-end tests: they drive the built `kk-bundle` and `kk-install` binaries and the repository's
//! scripts the way the README tells an operator to.
//!
//! Test names matter to `.config/nextest.toml`: tests under a `lab::` or `dist::` module share machine
//! resources (lab nodes, ports, most of the CPU) and run one at a time in the `serial-lab` group.

mod bundle_lab;
mod chart_images_lab;
mod cli;
mod cni_lab;
mod dist;
mod docker_lab;
mod external_lab;
mod external_registry;
mod install_bundle;
mod install_lab;
mod install_lock;
mod install_plan;
mod keygen;
mod kubekey_lab;
mod kubernetes_lab;
mod lab;
mod labkit;
mod nodekit;
mod nodes_lab;
mod nspawn_lab;
mod packages_lab;
mod precheck_lab;
mod rebuild_lab;
mod referrers;
mod registry_failover_lab;
mod registry_load;
mod signing;
mod ssh_lab;
mod support;
mod upgrade_lab;
mod upgrade_plan;
