//! `kk-install certs check` and `certs renew`: the cluster's certificates after the install.
//!
//! # check
//!
//! Reads, over SSH, every certificate kk and kubeadm made on every node — kubeadm's tree under
//! `/etc/kubernetes/pki`, the client certificates embedded in kubeadm's kubeconfigs, etcd's
//! member certificates, kk's registry certificate and the CA every node trusts under
//! `/etc/kk/pki` — and lists node, path, subject, expiry and days left ([`table`]).
//!
//! # renew, and the one master copy
//!
//! kk makes kubeadm's tree, etcd's member certificates and the registry's centrally, in the
//! master copy of the installer's work directory, and never reissues them during an install
//! (see [`crate::pki`]). A renewal is the one exception, asked for by the operator, and it
//! keeps the design's guarantees:
//!
//! - **kk renews what kk made, in the master copy first** (`apiserver`, `apiserver-kubelet-client`,
//!   `front-proxy-client`, `apiserver-etcd-client`, `etcd-healthcheck-client`, `etcd-server`,
//!   `etcd-peer`, `registry`): the same key, the same names, a new validity from now, signed by
//!   the same CA ([`crate::pki::renew`]). The master copy and the nodes stay the same files, so a
//!   later install run finds every node's certificate equal to the master copy's and changes
//!   nothing. A renewal by kubeadm on a node instead would leave the master copy stale, and
//!   the next install would either overwrite the node's newer file or refuse.
//! - **kubeadm renews what only kubeadm holds**: the kubeconfigs (`admin.conf`,
//!   `super-admin.conf`, `controller-manager.conf`, `scheduler.conf`), whose keys were made on
//!   the control plane, and, with stacked etcd, etcd's certificates, which kubeadm makes on each
//!   control plane. `kubeadm certs renew NAME...` runs on each control plane that has them.
//! - **A node's file is replaced only when it is the master copy's**: a certificate with the
//!   same key. A file kubeadm made on the node has its own key and is never replaced by kk's;
//!   and since a renewal keeps the key, a renewal that stopped half-way (a node unreachable, a
//!   service that did not come back), run again, still puts the file on every node that lacks
//!   it (the master copy is renewed once more, which only moves its validity by minutes).
//! - **One node at a time**, as kubeadm documents certificate renewal: each node gets its files
//!   and kubeadm's renewal, then its affected services restart and must serve again before the
//!   next node starts — etcd members with a health check between (a quorum is never lost to two
//!   restarts at once), static control-plane pods by moving the manifest out of the kubelet's
//!   directory until the pod is gone and back (kubeadm's documented restart), `kk-registry`.
//!   Every step is returned in order ([`Done`]) and printed, and each command is in the node's
//!   log in the work directory.
//! - **CAs are not rotated.** A new CA must be trusted by every kubelet, kubeconfig, service
//!   account token and containerd before anything it signs is used: a multi-step rotation
//!   (kubeadm's manual procedure), out of scope here. `certs renew` names each CA within
//!   [`table::CA_WARN_DAYS`] of its expiry with what rotating it takes.

mod error;
pub mod plan;
mod run;
pub mod table;

pub use error::CertsError;
pub use run::{Done, ca_notes, check, renew, spread};
