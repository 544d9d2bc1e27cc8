//! SHA-256 digests, the only hash of format v1.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest. Displayed and serialised in OCI form, `sha256:<64 lowercase hex>`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The digest and length of everything `reader` yields.
    pub fn of_reader(mut reader: impl Read) -> io::Result<(Self, u64)> {
        let mut hashing = Hashing::new(io::sink());
        let size = io::copy(&mut reader, &mut hashing)?;
        Ok((hashing.finish().1, size))
    }

    /// The digest whose 32 bytes are `bytes`.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The digest a finished hasher computed.
    pub(crate) fn from_hasher(hasher: Sha256) -> Self {
        Self(hasher.finalize().into())
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, without the `sha256:` prefix.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses exactly 64 lowercase hex digits (no prefix).
    ///
    /// Uppercase is refused on purpose: the checksum list and blob paths must have one spelling
    /// per digest, or two byte sequences would name the same content.
    pub fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 64 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The text was not `sha256:` followed by 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a sha256 digest; expected `sha256:` and 64 lowercase hex digits")]
pub struct InvalidDigest(pub String);

impl FromStr for Sha256Digest {
    type Err = InvalidDigest;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.strip_prefix("sha256:")
            .and_then(Self::from_hex)
            .ok_or_else(|| InvalidDigest(text.to_owned()))
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sha256Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Hashes everything that passes through it, in either direction.
#[derive(Debug)]
pub(crate) struct Hashing<T> {
    inner: T,
    hasher: Sha256,
    count: u64,
}

impl<T> Hashing<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    pub(crate) fn finish(self) -> (T, Sha256Digest, u64) {
        (
            self.inner,
            Sha256Digest(self.hasher.finalize().into()),
            self.count,
        )
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// How many chunks may wait for the hashing thread. With one, a bundle's writer and its hash
/// went in lock step: the writer blocked while the hash had a chunk queued, and the hash then
/// waited for the writer's next (`perf` showed the output's hash busy 60-90 % of a rebuild's
/// write). Four absorb that; a chunk is a 4 MiB piece of a stored frame or one compressed frame
/// (at most 32 MiB), and a rebuild's peak memory grew by about 14 MB (BENCHMARKS.md).
const QUEUED_CHUNKS: usize = 4;

/// A sha256 fed from one thread and computed on another, so that a reader can decode and write
/// while the previous bytes are hashed: on two cores this is most of what separates a
/// verifying unpack from plain `zstd -d | tar -x` (see BENCHMARKS.md).
///
/// Bytes are copied into buffers the worker hands back once hashed, so large frames do not
/// cost fresh pages each time. At most [`QUEUED_CHUNKS`] chunks wait, and one is hashed.
#[derive(Debug)]
pub(crate) struct BackgroundHasher {
    work: std::sync::mpsc::SyncSender<Work>,
    spent: std::sync::mpsc::Receiver<Vec<u8>>,
    digests: std::sync::mpsc::Receiver<(Sha256Digest, u64)>,
}

#[derive(Debug)]
enum Work {
    Bytes(Vec<u8>),
    /// Report the digest of everything since the last `Finish`, and start over.
    Finish,
}

impl BackgroundHasher {
    pub(crate) fn new() -> Self {
        let (work, queue) = std::sync::mpsc::sync_channel(QUEUED_CHUNKS);
        let (give_back, spent) = std::sync::mpsc::channel();
        let (report, digests) = std::sync::mpsc::channel();
        // The worker ends when `work` is dropped with this hasher.
        std::thread::spawn(move || {
            let (mut hasher, mut count) = (Sha256::new(), 0u64);
            for item in queue {
                match item {
                    Work::Bytes(chunk) => {
                        hasher.update(&chunk);
                        count += chunk.len() as u64;
                        let _ = give_back.send(chunk);
                    }
                    Work::Finish => {
                        let digest = Sha256Digest::from_hasher(std::mem::take(&mut hasher));
                        let _ = report.send((digest, std::mem::take(&mut count)));
                    }
                }
            }
        });
        Self {
            work,
            spent,
            digests,
        }
    }

    /// Queues a copy of `bytes` for hashing.
    pub(crate) fn update(&self, bytes: &[u8]) {
        let mut chunk = self.spent.try_recv().unwrap_or_default();
        chunk.clear();
        chunk.extend_from_slice(bytes);
        // Sends fail only if the worker died; `finish` then reports no digest.
        let _ = self.work.send(Work::Bytes(chunk));
    }

    /// Queues `chunk` itself for hashing (no copy) and returns a spent buffer to reuse, with
    /// its old length and contents (overwrite them: keeping the length spares re-zeroing it).
    pub(crate) fn update_owned(&self, chunk: Vec<u8>) -> Vec<u8> {
        let spare = self.spent.try_recv().unwrap_or_default();
        let _ = self.work.send(Work::Bytes(chunk));
        spare
    }

    /// The digest and length of everything queued since the last call; `None` if the worker
    /// is gone (the caller must then treat the content as unverified).
    pub(crate) fn finish(&self) -> Option<(Sha256Digest, u64)> {
        self.end_part()?;
        self.next_digest()
    }

    /// Like [`finish`](Self::finish), but without waiting: the digest of everything queued
    /// since the last part ended is reported later, in order, to [`Self::next_digest`] or
    /// [`Self::try_digest`]. `None` if the worker is gone.
    pub(crate) fn end_part(&self) -> Option<()> {
        self.work.send(Work::Finish).ok()
    }

    /// The digest and length of the oldest part not yet told, once it is hashed.
    pub(crate) fn next_digest(&self) -> Option<(Sha256Digest, u64)> {
        self.digests.recv().ok()
    }

    /// The digest and length of the oldest part not yet told, if it is hashed already.
    pub(crate) fn try_digest(&self) -> Option<(Sha256Digest, u64)> {
        self.digests.try_recv().ok()
    }
}

/// A writer whose bytes are also hashed on a [`BackgroundHasher`]'s thread: the writing thread
/// only copies them, so hashing the parts of a split bundle overlaps writing them.
pub(crate) struct BackgroundHashing<W> {
    inner: W,
    hasher: BackgroundHasher,
    count: u64,
}

impl<W: Write> BackgroundHashing<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: BackgroundHasher::new(),
            count: 0,
        }
    }

    /// How many bytes passed so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The writer, the digest of everything written and its length.
    pub(crate) fn finish(self) -> io::Result<(W, Sha256Digest, u64)> {
        let (digest, count) = self
            .hasher
            .finish()
            .ok_or_else(|| io::Error::other("the hashing thread stopped"))?;
        Ok((self.inner, digest, count))
    }
}

impl<W: Write> Write for BackgroundHashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hands everything it reads to a [`BackgroundHasher`].
pub(crate) struct HashedReader<'h, R> {
    inner: R,
    hasher: &'h BackgroundHasher,
}

impl<'h, R> HashedReader<'h, R> {
    pub(crate) fn new(inner: R, hasher: &'h BackgroundHasher) -> Self {
        Self { inner, hasher }
    }
}

impl<R: Read> Read for HashedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.hasher.update(&buf[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_the_oci_form() {
        let d = Sha256Digest::of(b"");
        let text = d.to_string();
        assert_eq!(
            text,
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(text.parse::<Sha256Digest>(), Ok(d));
    }

    #[test]
    fn refuses_other_spellings() {
        for bad in [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
            "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            assert!(bad.parse::<Sha256Digest>().is_err(), "{bad}");
        }
    }

    #[test]
    fn hashing_reader_counts_and_hashes() {
        let mut r = Hashing::new(&b"abc"[..]);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        let (_, d, n) = r.finish();
        assert_eq!((d, n), (Sha256Digest::of(b"abc"), 3));
    }

    #[test]
    fn background_hasher_matches_and_starts_over_after_each_finish() {
        let hasher = BackgroundHasher::new();
        let long = vec![7u8; 100_000];
        for text in [&b"abc"[..], b"", &long] {
            let mut reader = HashedReader::new(text, &hasher);
            let mut out = Vec::new();
            reader.read_to_end(&mut out).unwrap();
            assert_eq!(
                hasher.finish(),
                Some((Sha256Digest::of(text), text.len() as u64))
            );
        }
    }
}
