//! Signing a bundle that was written unsigned (or signed with another key): the same frames,
//! copied compressed, then the signature member, the end marker, a new integrity frame and a new
//! seek table, into a temporary file renamed over the bundle.
//!
//! Every member keeps its frame, so the signed bundle is byte for byte what `build --sign`
//! writes at the default level, and its integrity frame is of the kind its format version
//! names: a bundle of format 1.2 stays one. The copied frames are hashed again for the new
//! integrity frame; the whole bundle is read once to verify it before anything is signed.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use p256::ecdsa::SigningKey;

use super::frames::FrameEncoder;
use super::output::Output;
use super::{DEFAULT_LEVEL, TarFrames};
use crate::Bundle;
use crate::bundle_error::BundleError;
use crate::member::{MemberPath, SIGNATURE_PATH};
use crate::sign::sigstore;

/// What [`sign_bundle`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedBundle {
    /// The signature: a Sigstore bundle JSON over the checksum list.
    pub signature: Vec<u8>,
    /// Whether it was embedded. A split bundle keeps its parts as they are (their sizes and
    /// hashes are in the parts index a copy may already have been checked against), so its
    /// signature is only written beside it.
    pub embedded: bool,
}

/// Verifies the bundle at `path` in full, signs its checksum list with `key`, and (for a
/// single-file bundle) rewrites it with the signature as its last member, replacing any
/// earlier signature. The caller writes the returned signature beside the bundle.
pub fn sign_bundle(path: &Path, key: &SigningKey) -> Result<SignedBundle, BundleError> {
    let mut bundle = Bundle::open(path)?;
    bundle.verify()?;
    let signature = sigstore::sign(key, &bundle.checksums().to_bytes());
    if bundle.is_split() {
        return Ok(SignedBundle {
            signature,
            embedded: false,
        });
    }
    let frames = bundle.unsigned_frames()?;
    let mtime = bundle.mtime();
    let kind = bundle.description().format_version.integrity_kind();
    drop(bundle);
    let mut source = File::open(path).map_err(|source| BundleError::Open {
        path: path.to_owned(),
        source,
    })?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mut encoder = FrameEncoder::new(Output::new(path, None)?, DEFAULT_LEVEL, workers, kind);
    let mut compressed = Vec::new();
    for (offset, size, decompressed) in frames {
        compressed.resize(size as usize, 0);
        source
            .seek(SeekFrom::Start(offset))
            .and_then(|_| source.read_exact(&mut compressed))
            .map_err(BundleError::Read)?;
        compressed = encoder.copy_frame(compressed, decompressed as u32, None)?;
    }
    let mut tar = TarFrames::new(encoder, mtime, true);
    tar.member_bytes(&MemberPath::fixed(SIGNATURE_PATH), &signature)?;
    tar.finish()?.commit()?;
    Ok(SignedBundle {
        signature,
        embedded: true,
    })
}
