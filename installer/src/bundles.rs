//! `kk-install verify`, `inspect` and `unpack`: a bundle read on the installer machine, with a
//! progress bar on a terminal and the result as text or JSON.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use bundle_spec::Bundle;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kk_install::trust::Signatures;
use serde_json::json;

use crate::cli::{InspectArgs, Output, UnpackArgs, VerifyArgs};

/// `kk-install verify`: every member, every part; with `--store`, a delta's base blobs there.
pub(crate) fn verify(args: &VerifyArgs, quiet: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let path = args.bundle.path();
    let mut bundle = open(path)?;
    let signatures = trust(&mut bundle, &args.trust.trusted_keys)?;
    if let Some(store) = &args.store {
        kk_install::registry::check_base(&bundle, store)
            .with_context(|| format!("bundle `{}` cannot go into this store", path.display()))?;
    }
    let bar = progress(bundle.content_size(), quiet);
    let verified = bundle
        .verify_with_progress(&mut |bytes| bar.inc(bytes))
        .with_context(|| format!("bundle `{}` is not intact", path.display()))?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    match args.output {
        Output::Text => crate::print(&format!(
            "ok: {} members, {} verified in {seconds:.1}s; identity {}\n{}{}",
            verified.members,
            bytesize::ByteSize(verified.bytes),
            bundle.identity(),
            delta_note(&bundle, args.store.is_some()),
            signature_lines(&signatures),
        )),
        Output::Json => crate::print_json(&json!({
            "bundle": path,
            "identity": bundle.identity().to_string(),
            "members": verified.members,
            "bytes": verified.bytes,
            "seconds": seconds,
            "base": bundle.base().map(|base| json!({
                "identity": base.identity.to_string(),
                "blobs": base.blobs.len(),
                "storeChecked": args.store.is_some(),
            })),
            "signature": signatures.to_json(),
        })),
    }
}

/// `kk-install inspect`: the bundle's header, or with `--sbom` its SBOM, without unpacking it.
pub(crate) fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let path = args.bundle.path();
    let context = || format!("cannot inspect `{}`", path.display());
    if args.sbom {
        let sbom = bundle_spec::inspect::inspect_sbom(path).with_context(context)?;
        return crate::print_bytes(&[sbom.as_slice(), b"\n"].concat());
    }
    match args.output {
        Output::Text => {
            crate::print(&bundle_spec::inspect::inspect_text(path).with_context(context)?)
        }
        Output::Json => {
            crate::print_json(&bundle_spec::inspect::inspect_json(path).with_context(context)?)
        }
    }
}

/// `kk-install unpack`.
pub(crate) fn unpack(args: &UnpackArgs, quiet: bool) -> anyhow::Result<()> {
    unpack_into(
        args.bundle.path(),
        &args.store,
        &args.trust.trusted_keys,
        args.output,
        quiet,
    )
}

/// Verifies the bundle at `path` while unpacking it into `store`, and reports what it did. A
/// bundle not signed by one of `trusted_keys` (when given) is refused before the store is
/// touched.
pub(crate) fn unpack_into(
    path: &Path,
    store: &Path,
    trusted_keys: &[PathBuf],
    output: Output,
    quiet: bool,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut bundle = open(path)?;
    let signatures = trust(&mut bundle, trusted_keys)?;
    if output == Output::Text {
        eprint!("{}", signature_lines(&signatures));
    }
    let bar = progress(bundle.content_size(), quiet);
    let unpacked = kk_install::registry::unpack(&mut bundle, store, &mut |bytes| bar.inc(bytes))
        .with_context(|| {
            format!(
                "cannot unpack `{}` into `{}`",
                path.display(),
                store.display()
            )
        })?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    match output {
        Output::Text => crate::print(&format!(
            "unpacked {} members ({} verified) into {} in {seconds:.1}s: {} blobs written, {} already present; identity {}\n",
            unpacked.verified.members,
            bytesize::ByteSize(unpacked.verified.bytes),
            store.display(),
            unpacked.written,
            unpacked.skipped,
            bundle.identity()
        )),
        Output::Json => crate::print_json(&json!({
            "bundle": path,
            "store": store,
            "identity": bundle.identity().to_string(),
            "members": unpacked.verified.members,
            "bytes": unpacked.verified.bytes,
            "blobsWritten": unpacked.written,
            "blobsPresent": unpacked.skipped,
            "seconds": seconds,
            "signature": signatures.to_json(),
        })),
    }
}

/// Checks the bundle's signatures against `trusted_keys` (see [`kk_install::trust::check`]):
/// the first thing done with an opened bundle. An unsigned bundle's warning goes to stderr.
pub(crate) fn trust(bundle: &mut Bundle, trusted_keys: &[PathBuf]) -> anyhow::Result<Signatures> {
    let signatures = kk_install::trust::check(bundle, trusted_keys)?;
    if let Some(warning) = signatures.warning() {
        eprintln!("{warning}");
    }
    Ok(signatures)
}

/// The signature report, a line each.
pub(crate) fn signature_lines(signatures: &Signatures) -> String {
    signatures
        .lines()
        .into_iter()
        .map(|line| line + "\n")
        .collect()
}

pub(crate) fn open(path: &Path) -> anyhow::Result<Bundle> {
    Bundle::open(path).with_context(|| format!("cannot open bundle `{}`", path.display()))
}

/// The bundle with every member header read: the node commands act on its header alone, and
/// refuse before any node is touched a bundle whose members lie about their sizes.
pub(crate) fn open_listed(path: &Path) -> anyhow::Result<Bundle> {
    Bundle::open_listed(path).with_context(|| format!("cannot open bundle `{}`", path.display()))
}

/// A bar with bytes/s on a terminal unless `quiet`; nothing otherwise (the final line reports).
fn progress(total: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("[{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// What `verify` adds for a delta bundle: the base it needs, and whether the store was checked.
fn delta_note(bundle: &Bundle, store_checked: bool) -> String {
    let Some(base) = bundle.base() else {
        return String::new();
    };
    let checked = if store_checked {
        "all of them are in the store"
    } else {
        "pass --store to check a store for them"
    };
    format!(
        "delta: builds on bundle {}, takes {} blobs from it; {checked}\n",
        base.identity,
        base.blobs.len()
    )
}
