//! `kk-install registry serve|push|ping|cert`, and `kk-install fetch`, which a node runs against
//! that registry.

use std::fmt::Write as _;

use anyhow::Context as _;
use tokio::runtime::Runtime;

use crate::cli::{
    CertArgs, FetchArgs, Output, PingArgs, PruneArgs, PushArgs, RevisionsArgs, ServeArgs,
    StoreSource,
};

/// `registry serve`: the store over HTTP, or HTTPS with rustls when given a certificate. The
/// address is bound before the store is filled, so a busy port fails first.
pub(crate) fn serve(runtime: &Runtime, args: &ServeArgs, quiet: bool) -> anyhow::Result<()> {
    let listener = kk_install::registry::bind(args.listen)?;
    let store = filled_store(&args.source, quiet)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(kk_install::registry::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    runtime.block_on(kk_install::registry::serve(
        listener,
        store,
        &args.source.store,
        tls.as_ref(),
    ))?;
    Ok(())
}

/// `registry push`: the store into an existing registry.
pub(crate) fn push(runtime: &Runtime, args: &PushArgs, quiet: bool) -> anyhow::Result<()> {
    let credentials = match (&args.username, &args.password_env) {
        (Some(username), Some(variable)) => Some(kk_install::push::Credentials {
            username: username.clone(),
            password: std::env::var(variable).with_context(|| {
                format!("environment variable `{variable}` (the password) is not set")
            })?,
        }),
        _ => None,
    };
    let target = kk_install::push::PushTarget {
        host: args.to.clone(),
        plain_http: args.plain_http,
        allow_plain_http_password: args.allow_plain_http_password,
        ca_file: args.ca.clone(),
        credentials,
        platforms: args.platforms.clone(),
    };
    // Refused before a bundle is unpacked for nothing.
    target.check()?;
    let store = filled_store(&args.source, quiet)?;
    // What happens to indexes the bundle has only some platforms of, said before any push.
    let partial = kk_install::push::preview(&store, &target.platforms)?;
    crate::print(&kk_install::push::summary(&partial))?;
    let report = runtime
        .block_on(kk_install::push::push(&store, &target, args.jobs))
        .with_context(|| {
            format!(
                "cannot push `{}` to `{}`",
                args.source.store.display(),
                args.to
            )
        })?;
    crate::print(&format!(
        "pushed {} repositories, {} manifests to {}: {} blobs uploaded ({}), {} mounted, {} already there\n",
        report.repositories,
        report.manifests,
        args.to,
        report.blobs_uploaded,
        bytesize::ByteSize(report.bytes_uploaded),
        report.blobs_mounted,
        report.blobs_present
    ))?;
    crate::print(&kk_install::push::outcome(&report))
}

/// `registry ping`: waits until every registry host answers over TLS.
pub(crate) fn ping(runtime: &Runtime, args: &PingArgs) -> anyhow::Result<()> {
    crate::print(&kk_node::cli::ping(runtime, args)?)
}

/// `registry cert`: the CA (made once) and the registry's serving certificate.
pub(crate) fn cert(args: &CertArgs) -> anyhow::Result<()> {
    let issued = crate::tls::issue(&args.ca_out, &args.names)?;
    crate::print(&format!(
        "CA          {}\ncertificate {}\nkey         {}\n",
        issued.ca_cert.display(),
        issued.cert.display(),
        issued.key.display()
    ))
}

/// `registry revisions`: the store's revisions, oldest first.
pub(crate) fn revisions(args: &RevisionsArgs) -> anyhow::Result<()> {
    let revisions = kk_install::registry::summarize(&args.store)
        .with_context(|| format!("cannot list the revisions of `{}`", args.store.display()))?;
    match args.output {
        Output::Text => crate::print(&kk_install::registry::table(&revisions)),
        Output::Json => crate::print_json(&serde_json::to_value(&revisions)?),
    }
}

/// `registry prune`: the store down to its `--keep` newest revisions.
pub(crate) fn prune(args: &PruneArgs) -> anyhow::Result<()> {
    let pruned = kk_install::registry::prune(&args.store, usize::from(args.keep), args.dry_run)
        .with_context(|| format!("cannot prune `{}`", args.store.display()))?;
    let short = |digests: &[bundle_spec::Sha256Digest]| {
        digests
            .iter()
            .map(|d| d.hex()[..12].to_owned())
            .collect::<Vec<_>>()
    };
    match args.output {
        Output::Text => {
            let verb = if pruned.dry_run {
                "would remove"
            } else {
                "removed"
            };
            let mut text = format!(
                "{verb} {} blobs ({}) of {} revisions; kept {} revisions\n",
                pruned.blobs,
                bytesize::ByteSize(pruned.bytes),
                pruned.dropped.len(),
                pruned.kept.len()
            );
            for (label, list) in [("dropped", &pruned.dropped), ("kept", &pruned.kept)] {
                if !list.is_empty() {
                    let _ = writeln!(text, "{label}: {}", short(list).join(", "));
                }
            }
            crate::print(&text)
        }
        Output::Json => crate::print_json(&serde_json::json!({
            "store": args.store,
            "dryRun": pruned.dry_run,
            "kept": pruned.kept,
            "dropped": pruned.dropped,
            "blobsRemoved": pruned.blobs,
            "bytesFreed": pruned.bytes,
        })),
    }
}

/// `kk-install fetch`: on a node, a binary from kk's registry into a directory.
pub(crate) fn fetch(runtime: &Runtime, args: &FetchArgs) -> anyhow::Result<()> {
    crate::print(&kk_node::cli::fetch(runtime, args)?)
}

/// The store of `source`, after unpacking its bundle into it when one is given.
fn filled_store(source: &StoreSource, quiet: bool) -> anyhow::Result<kk_install::registry::Store> {
    if let Some(bundle) = source.bundle() {
        crate::bundles::unpack_into(
            bundle,
            &source.store,
            &source.trust.trusted_keys,
            Output::Text,
            quiet,
        )?;
    }
    kk_install::registry::Store::open(&source.store)
        .with_context(|| format!("cannot read the store `{}`", source.store.display()))
}
