//! The content-addressed blob cache: everything `kk-bundle` downloads lands here first.
//!
//! Layout under the cache directory (`--cache DIR`, default [`Cache::default_dir`]):
//!
//! - `blobs/sha256/<hex>`: complete, verified blobs, named by their digest;
//! - `partial/<sha256 of key>`: a download in progress, named after its key (the URL), so an
//!   interrupted build resumes it on the next run;
//! - `partial/<…>.<pid>-<n>` and `partial/.tmp*`: private scratch files of one process.
//!
//! A blob only ever enters `blobs/` by `rename` from `partial/`, after its sha256 (and size,
//! when known) was checked. Neither the file nor the rename is synced: a cold build would
//! otherwise write its content to disk twice with a sync each (cache, then bundle), which on
//! this project's bench disk alone exceeds the cold-build target (see BENCHMARKS.md). A power
//! cut may therefore leave an entry renamed but empty or short; every [`Cache::get`] re-hashes
//! the entry before it is used, so such an entry (like a disk error or a hand edit) causes a
//! refetch rather than a bad bundle. The bundle itself stays fsynced.
//!
//! Two builds may share one cache. Renames are atomic and both would rename identical bytes, so
//! `blobs/` needs no locking. A resumable partial file is locked (`flock`) by the download that
//! writes it; a second download of the same key meanwhile writes a private partial instead,
//! which it deletes if it does not finish.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bundle_spec::{Sha256Digest, durable};
use sha2::{Digest as _, Sha256};

pub use error::CacheError;

mod error;

/// Buffer size for hashing and writing.
const BUFFER: usize = 256 * 1024;

/// Numbers the private partial files of this process.
static PRIVATE_PARTIALS: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
thread_local! {
    /// The blocking file operations of the cache run on this thread so far.
    static FILE_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Notes a blocking file operation, so tests can check that async code leaves them to the
/// blocking pool; does nothing outside tests.
#[inline]
fn file_call() {
    #[cfg(test)]
    FILE_CALLS.with(|calls| calls.set(calls.get() + 1));
}

/// How many blocking file operations of the cache ran on the calling thread so far: a test on a
/// current-thread runtime expects none on its own thread from async code.
#[cfg(test)]
pub(crate) fn file_calls_on_this_thread() -> u64 {
    FILE_CALLS.with(std::cell::Cell::get)
}

/// A content-addressed store of verified blobs on disk; cheap to clone and share.
#[derive(Debug, Clone)]
pub struct Cache {
    root: Arc<PathBuf>,
}

/// A verified blob in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedBlob {
    /// Its sha256.
    pub digest: Sha256Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Where it is: `<cache>/blobs/sha256/<hex>`.
    pub path: PathBuf,
}

impl Cache {
    /// Opens the cache at `dir`, creating its directories as needed.
    pub fn open(dir: &Path) -> Result<Cache, CacheError> {
        let cache = Cache {
            root: Arc::new(dir.to_owned()),
        };
        for sub in [cache.blobs_dir(), cache.partial_dir()] {
            fs::create_dir_all(&sub).map_err(|source| CacheError::Dir {
                path: sub.clone(),
                source,
            })?;
        }
        Ok(cache)
    }

    /// `<user cache dir>/kk-bundle` (`~/.cache/kk-bundle` on Linux), or under the temporary
    /// directory when the platform has no cache directory.
    pub fn default_dir() -> PathBuf {
        dirs::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("kk-bundle")
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// A verified blob: re-hashes the file on every hit; a corrupt entry is removed (logged
    /// with `tracing::warn` naming it) and `None` returned, so it is refetched.
    pub fn get(&self, digest: &Sha256Digest) -> Result<Option<CachedBlob>, CacheError> {
        file_call();
        let path = self.blob_path(digest);
        match rehash(&path, digest, None)? {
            Rehash::Missing => Ok(None),
            Rehash::Intact { size } => Ok(Some(CachedBlob {
                digest: *digest,
                size,
                path,
            })),
            Rehash::Removed { actual } => {
                warn_removed(&path, digest, &actual);
                Ok(None)
            }
        }
    }

    /// The bytes of the small blob `digest` (a manifest, an index), read once and checked
    /// against the digest; `None` when it is not cached, or was damaged and is removed now, as
    /// [`get`](Self::get) does.
    pub fn read_small(&self, digest: &Sha256Digest) -> Result<Option<Vec<u8>>, CacheError> {
        file_call();
        let path = self.blob_path(digest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheError::File { path, source }),
        };
        let actual = Sha256Digest::of(&bytes);
        if actual == *digest {
            return Ok(Some(bytes));
        }
        remove_if_present(&path)?;
        warn_removed(&path, digest, &actual);
        Ok(None)
    }

    /// Starts (or resumes, if a partial download for `key` exists) writing a blob; `what` names
    /// it in errors (the URL in backticks, or a description), `expected` is the digest it must
    /// have, if known.
    ///
    /// Resuming re-hashes the bytes already present. If another download holds the partial
    /// file of `key`, this one writes a private partial file from scratch instead.
    pub fn begin(
        &self,
        key: &str,
        what: &str,
        expected: Option<Sha256Digest>,
    ) -> Result<Download, CacheError> {
        file_call();
        let shared = self
            .partial_dir()
            .join(Sha256Digest::of(key.as_bytes()).hex());
        let (file, path, private) = if let Some(file) = open_locked(&shared)? {
            (file, shared, false)
        } else {
            let path = private_partial(&shared);
            (create_private(&path)?, path, true)
        };
        let mut download = Download {
            writer: BufWriter::with_capacity(BUFFER, file),
            path,
            blobs: self.blobs_dir(),
            key: key.to_owned(),
            what: what.to_owned(),
            expected,
            expected_size: None,
            hasher: Sha256::new(),
            offset: 0,
            private,
            done: false,
        };
        download.rehash_existing()?;
        Ok(download)
    }

    /// Stores bytes already in memory (manifests, small configs), verified against
    /// `expected` if given.
    pub fn put_bytes(
        &self,
        bytes: &[u8],
        expected: Option<Sha256Digest>,
    ) -> Result<CachedBlob, CacheError> {
        file_call();
        let digest = Sha256Digest::of(bytes);
        if let Some(expected) = expected
            && expected != digest
        {
            return Err(CacheError::DigestMismatch {
                what: format!("data to cache ({} bytes)", bytes.len()),
                expected,
                actual: digest,
            });
        }
        if let Some(blob) = self.get(&digest)? {
            return Ok(blob);
        }
        let partial = self.partial_dir();
        let file_error = |source| CacheError::File {
            path: partial.clone(),
            source,
        };
        let mut temp = tempfile::NamedTempFile::new_in(&partial).map_err(file_error)?;
        temp.write_all(bytes).map_err(file_error)?;
        let path = self.blob_path(&digest);
        // Unsynced, as every entry: `get` re-hashes it before use (see the module docs).
        durable::rename_unsynced(temp, &path).map_err(|source| CacheError::File {
            path: path.clone(),
            source,
        })?;
        Ok(CachedBlob {
            digest,
            size: bytes.len() as u64,
            path,
        })
    }

    /// Where the blob with `digest` is stored (whether or not it is present).
    pub fn blob_path(&self, digest: &Sha256Digest) -> PathBuf {
        self.blobs_dir().join(digest.hex())
    }

    fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs").join("sha256")
    }

    fn partial_dir(&self) -> PathBuf {
        self.root.join("partial")
    }
}

impl CachedBlob {
    /// Re-hashes the file, for a blob the build left unread when it found it (see
    /// `build::fetch`) before anything is made of its bytes other than the bundle's copy of
    /// its frames. A damaged file is removed, so the next build fetches it again.
    pub fn verify(&self) -> Result<(), CacheError> {
        file_call();
        match rehash(&self.path, &self.digest, Some(self.size))? {
            Rehash::Intact { .. } => Ok(()),
            Rehash::Missing => Err(CacheError::File {
                path: self.path.clone(),
                source: io::ErrorKind::NotFound.into(),
            }),
            Rehash::Removed { actual } => Err(CacheError::Damaged {
                path: self.path.clone(),
                expected: self.digest,
                actual,
            }),
        }
    }
}

/// A blob being written into the cache; see [`Cache::begin`].
///
/// Dropped without [`Download::finish`], a resumable partial file stays for the next run to
/// resume, and a private one is deleted.
pub struct Download {
    writer: BufWriter<File>,
    path: PathBuf,
    blobs: PathBuf,
    key: String,
    what: String,
    expected: Option<Sha256Digest>,
    expected_size: Option<u64>,
    hasher: Sha256,
    offset: u64,
    private: bool,
    done: bool,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download")
            .field("key", &self.key)
            .field("path", &self.path)
            .field("offset", &self.offset)
            .field("expected", &self.expected)
            .field("expected_size", &self.expected_size)
            .finish_non_exhaustive()
    }
}

impl Download {
    /// Bytes already present: where to resume.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Whether this download writes the resumable partial file of its key (rather than a
    /// private one, because another download held it).
    pub fn is_resumable(&self) -> bool {
        !self.private
    }

    /// Sets the size the blob must have, once known (announced by the server, or by the
    /// descriptor of an image blob): from then on a [`Download::write`] past it is refused and
    /// [`Download::finish`] refuses fewer bytes.
    pub fn expect_size(&mut self, size: u64) {
        self.expected_size = Some(size);
    }

    /// Discards the bytes written so far, e.g. when the server ignored `Range`.
    pub fn restart(&mut self) -> Result<(), CacheError> {
        file_call();
        let io_error = |source| CacheError::File {
            path: self.path.clone(),
            source,
        };
        self.writer.flush().map_err(io_error)?;
        let file = self.writer.get_mut();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
            .map_err(io_error)?;
        self.hasher = Sha256::new();
        self.offset = 0;
        self.expected_size = None;
        Ok(())
    }

    /// Appends `chunk`, unless it would take the blob past its expected size: then nothing
    /// of it is written and the error names the blob, the size it must have and the bytes
    /// received so far, so a source sending too much is cut off as soon as it does.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), CacheError> {
        file_call();
        let received = self.offset + chunk.len() as u64;
        if let Some(expected) = self.expected_size
            && received > expected
        {
            return Err(CacheError::SizeMismatch {
                what: self.what.clone(),
                expected,
                actual: received,
            });
        }
        self.writer
            .write_all(chunk)
            .map_err(|source| CacheError::File {
                path: self.path.clone(),
                source,
            })?;
        self.hasher.update(chunk);
        self.offset += chunk.len() as u64;
        Ok(())
    }

    /// Verifies (sha256 over all bytes, resumed ones included, and the size if known) and
    /// renames the blob into `blobs/`, unsynced (see the module docs). On a mismatch the partial file is deleted and the
    /// error names the blob (`what` of [`Cache::begin`]), the expected and the actual digest
    /// or size.
    pub fn finish(mut self) -> Result<CachedBlob, CacheError> {
        file_call();
        self.done = true;
        self.flush()?;
        let digest = digest_of(std::mem::take(&mut self.hasher));
        if let Some(expected) = self.expected_size
            && expected != self.offset
        {
            remove_if_present(&self.path)?;
            return Err(CacheError::SizeMismatch {
                what: std::mem::take(&mut self.what),
                expected,
                actual: self.offset,
            });
        }
        if let Some(expected) = self.expected
            && expected != digest
        {
            remove_if_present(&self.path)?;
            return Err(CacheError::DigestMismatch {
                what: std::mem::take(&mut self.what),
                expected,
                actual: digest,
            });
        }
        let path = self.blobs.join(digest.hex());
        fs::rename(&self.path, &path).map_err(|source| CacheError::File {
            path: path.clone(),
            source,
        })?;
        Ok(CachedBlob {
            digest,
            size: self.offset,
            path,
        })
    }

    fn flush(&mut self) -> Result<(), CacheError> {
        self.writer.flush().map_err(|source| CacheError::File {
            path: self.path.clone(),
            source,
        })
    }

    /// Feeds the bytes a previous run left in the partial file to the hasher.
    fn rehash_existing(&mut self) -> Result<(), CacheError> {
        let path = self.path.clone();
        let file = self.writer.get_mut();
        let mut rehash = || -> io::Result<u64> {
            file.seek(SeekFrom::Start(0))?;
            let mut buffer = vec![0; BUFFER];
            let mut total = 0;
            loop {
                let read = file.read(&mut buffer)?;
                if read == 0 {
                    return Ok(total);
                }
                self.hasher.update(&buffer[..read]);
                total += read as u64;
            }
        };
        self.offset = rehash().map_err(|source| CacheError::File { path, source })?;
        if self.offset > 0 {
            tracing::debug!(key = %self.key, offset = self.offset, "resuming a partial download");
        }
        Ok(())
    }
}

impl Drop for Download {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Keep what arrived: the file is resumable, or (private) will never be looked at again.
        if self.private {
            let _ = fs::remove_file(&self.path);
        } else {
            let _ = self.writer.flush();
        }
    }
}

/// Opens (creating) the partial file at `path` and locks it; `None` if another download holds
/// the lock.
fn open_locked(path: &Path) -> Result<Option<File>, CacheError> {
    let io_error = |source| CacheError::File {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_error)?;
    let locked = file.try_lock();
    match locked {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(source)) => Err(io_error(source)),
    }
}

/// A partial-file name no other download uses: `<shared>.<pid>-<n>`.
fn private_partial(shared: &Path) -> PathBuf {
    let number = PRIVATE_PARTIALS.fetch_add(1, Ordering::Relaxed);
    let mut name = shared.as_os_str().to_owned();
    name.push(format!(".{}-{number}", std::process::id()));
    PathBuf::from(name)
}

fn create_private(path: &Path) -> Result<File, CacheError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|source| CacheError::File {
            path: path.to_owned(),
            source,
        })
}

/// What re-hashing a cached file found.
enum Rehash {
    Missing,
    Intact {
        size: u64,
    },
    /// The content differed (digest `actual`, or another size) and the file was removed.
    Removed {
        actual: Sha256Digest,
    },
}

/// Re-hashes the file at `path` against `digest`, and `size` when the caller knows it; a file
/// whose content differs is removed, so the blob is fetched again.
fn rehash(path: &Path, digest: &Sha256Digest, size: Option<u64>) -> Result<Rehash, CacheError> {
    let file_error = |source| CacheError::File {
        path: path.to_owned(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Rehash::Missing),
        Err(source) => return Err(file_error(source)),
    };
    let (actual, actual_size) = hash_reader(file).map_err(file_error)?;
    if actual == *digest && size.is_none_or(|size| size == actual_size) {
        return Ok(Rehash::Intact { size: actual_size });
    }
    remove_if_present(path)?;
    Ok(Rehash::Removed { actual })
}

fn hash_reader(mut reader: impl Read) -> io::Result<(Sha256Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; BUFFER];
    let mut total = 0;
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            return Ok((digest_of(hasher), total));
        }
        hasher.update(&buffer[..read]);
        total += read as u64;
    }
}

/// The digest a finished hasher computed.
pub(crate) fn digest_of(hasher: Sha256) -> Sha256Digest {
    let bytes: [u8; 32] = hasher.finalize().into();
    // `bundle_spec::Sha256Digest` has no public constructor from bytes; 64 lowercase hex
    // digits always parse.
    Sha256Digest::from_hex(&hex::encode(bytes))
        .unwrap_or_else(|| unreachable!("hex of 32 bytes is a sha256 digest"))
}

/// Tells that the entry at `path`, expected to have `digest`, was removed for its content.
fn warn_removed(path: &Path, digest: &Sha256Digest, actual: &Sha256Digest) {
    tracing::warn!(
        path = %path.display(),
        expected = %digest,
        %actual,
        "removed corrupt cache entry `{}`: its content has digest `{actual}`",
        path.display()
    );
}

fn remove_if_present(path: &Path) -> Result<(), CacheError> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(CacheError::File {
            path: path.to_owned(),
            source: error,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs_in(cache: &Cache) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(cache.blobs_dir())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn partials_in(cache: &Cache) -> usize {
        fs::read_dir(cache.partial_dir()).unwrap().count()
    }

    #[test]
    fn put_bytes_then_get() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let digest = Sha256Digest::of(b"hello");
        assert_eq!(cache.get(&digest).unwrap(), None);
        let blob = cache.put_bytes(b"hello", Some(digest)).unwrap();
        assert_eq!((blob.digest, blob.size), (digest, 5));
        assert_eq!(fs::read(&blob.path).unwrap(), b"hello");
        assert_eq!(cache.get(&digest).unwrap(), Some(blob));
        assert_eq!(blobs_in(&cache), [digest.hex()]);
        assert_eq!(partials_in(&cache), 0);
    }

    #[test]
    fn put_bytes_refuses_a_wrong_digest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let wrong = Sha256Digest::of(b"other");
        let error = cache.put_bytes(b"hello", Some(wrong)).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(&wrong.to_string()), "{message}");
        assert!(
            message.contains(&Sha256Digest::of(b"hello").to_string()),
            "{message}"
        );
        assert!(blobs_in(&cache).is_empty());
    }

    #[test]
    fn a_corrupt_entry_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let blob = cache.put_bytes(b"hello", None).unwrap();
        fs::write(&blob.path, b"hellp").unwrap();
        assert_eq!(cache.get(&blob.digest).unwrap(), None);
        assert!(!blob.path.exists());
    }

    #[test]
    fn a_blob_left_unread_is_verified_before_use() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let blob = cache.put_bytes(b"hello", None).unwrap();
        blob.verify().unwrap();
        for damaged in [&b"hellp"[..], b"hell", b""] {
            fs::write(&blob.path, damaged).unwrap();
            let error = blob.verify().unwrap_err();
            assert!(
                matches!(&error, CacheError::Damaged { path, expected, .. } if *path == blob.path && *expected == blob.digest),
                "{error}"
            );
            assert!(error.to_string().contains("run the build again"), "{error}");
            assert!(!blob.path.exists(), "removed");
        }
    }

    #[test]
    fn an_entry_a_power_cut_left_empty_or_short_is_fetched_again() {
        // Entries are renamed in unsynced: after a power cut one may be there but empty or cut.
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let digest = Sha256Digest::of(b"hello world");
        for left in [&b""[..], b"hello"] {
            let mut download = cache
                .begin("http://x/blob", "`blob`", Some(digest))
                .unwrap();
            download.write(b"hello world").unwrap();
            let blob = download.finish().unwrap();
            fs::write(&blob.path, left).unwrap();
            assert_eq!(cache.get(&digest).unwrap(), None);
            assert!(!blob.path.exists(), "the damaged entry is removed");
        }
        let mut download = cache
            .begin("http://x/blob", "`blob`", Some(digest))
            .unwrap();
        assert_eq!(download.offset(), 0, "nothing stale is resumed");
        download.write(b"hello world").unwrap();
        download.finish().unwrap();
        assert_eq!(cache.get(&digest).unwrap().map(|b| b.size), Some(11));
    }

    #[test]
    fn an_interrupted_download_resumes_and_hashes_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let digest = Sha256Digest::of(b"hello world");
        let mut first = cache
            .begin(
                "https://example.org/f",
                "`https://example.org/f`",
                Some(digest),
            )
            .unwrap();
        assert_eq!(first.offset(), 0);
        first.write(b"hello ").unwrap();
        drop(first);

        let mut second = cache
            .begin(
                "https://example.org/f",
                "`https://example.org/f`",
                Some(digest),
            )
            .unwrap();
        assert_eq!(second.offset(), 6);
        second.write(b"world").unwrap();
        second.expect_size(11);
        let blob = second.finish().unwrap();
        assert_eq!((blob.digest, blob.size), (digest, 11));
        assert_eq!(fs::read(&blob.path).unwrap(), b"hello world");
        assert_eq!(partials_in(&cache), 0);
    }

    #[test]
    fn restart_discards_the_partial_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut download = cache.begin("k", "`k`", None).unwrap();
        download.write(b"stale").unwrap();
        download.restart().unwrap();
        assert_eq!(download.offset(), 0);
        download.write(b"fresh").unwrap();
        let blob = download.finish().unwrap();
        assert_eq!(blob.digest, Sha256Digest::of(b"fresh"));
        assert_eq!(fs::read(&blob.path).unwrap(), b"fresh");
    }

    #[test]
    fn a_mismatch_deletes_the_partial_and_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let expected = Sha256Digest::of(b"right");
        let mut download = cache
            .begin("k", "`https://example.org/k`", Some(expected))
            .unwrap();
        download.write(b"wrong").unwrap();
        let message = download.finish().unwrap_err().to_string();
        for part in [
            "`https://example.org/k`".to_owned(),
            expected.to_string(),
            Sha256Digest::of(b"wrong").to_string(),
        ] {
            assert!(message.contains(&part), "{message} lacks {part}");
        }
        assert!(blobs_in(&cache).is_empty());
        assert_eq!(partials_in(&cache), 0);
    }

    #[test]
    fn a_size_mismatch_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut download = cache.begin("k", "`k`", None).unwrap();
        download.write(b"abc").unwrap();
        download.expect_size(4);
        let error = download.finish().unwrap_err();
        assert!(
            matches!(
                error,
                CacheError::SizeMismatch {
                    expected: 4,
                    actual: 3,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(blobs_in(&cache).is_empty());
    }

    #[test]
    fn a_write_past_the_expected_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut download = cache.begin("k", "blob `b`", None).unwrap();
        download.expect_size(4);
        download.write(b"abc").unwrap();
        let error = download.write(b"de").unwrap_err();
        assert!(
            matches!(
                &error,
                CacheError::SizeMismatch {
                    expected: 4,
                    actual: 5,
                    what,
                } if what == "blob `b`"
            ),
            "{error:?}"
        );
        assert_eq!(download.offset(), 3, "nothing of the refused chunk is kept");
        download.write(b"d").unwrap();
        assert_eq!(download.finish().unwrap().size, 4);
    }

    #[test]
    fn concurrent_downloads_of_one_key_do_not_share_a_partial() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut first = cache.begin("k", "`k`", None).unwrap();
        let mut second = cache.begin("k", "`k`", None).unwrap();
        assert!(first.is_resumable());
        assert!(!second.is_resumable());
        first.write(b"same").unwrap();
        second.write(b"sa").unwrap();
        second.write(b"me").unwrap();
        let a = first.finish().unwrap();
        let b = second.finish().unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::read(&a.path).unwrap(), b"same");
        assert_eq!(partials_in(&cache), 0);
    }

    #[test]
    fn a_dropped_private_partial_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let held = cache.begin("k", "`k`", None).unwrap();
        let mut private = cache.begin("k", "`k`", None).unwrap();
        private.write(b"x").unwrap();
        drop(private);
        assert_eq!(partials_in(&cache), 1);
        drop(held);
        assert_eq!(cache.begin("k", "`k`", None).unwrap().offset(), 0);
    }
}
