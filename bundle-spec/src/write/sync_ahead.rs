//! A bundle file synced while it is written.
//!
//! The kernel starts writing a file's dirty pages back only past a share of the memory or after
//! half a minute, so without help nothing of a bundle reaches the disk until the `fdatasync`
//! that makes it durable, and the whole bundle's disk writing waits at the end of the build:
//! about 0.5 s of a 2.8 s cold build in `scripts/bench/build.sh`. [`SyncAhead`] asks a thread
//! of its own to sync the file every [`SYNC_EVERY`] bytes, so the disk writes the bundle while
//! the rest of it is still being compressed, and the last sync waits only for the tail. The
//! durability guarantee is the last sync's, as before; these only start the work earlier.

use std::io::{self, Write};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

use tempfile::NamedTempFile;

/// How many bytes are written between two requests to sync.
const SYNC_EVERY: u64 = 16 << 20;

/// A temporary output file whose data a background thread syncs as it grows.
pub(crate) struct SyncAhead {
    file: NamedTempFile,
    written: u64,
    next_sync: u64,
    /// Requests to the syncing thread; `None` once it stopped on an error.
    requests: Option<SyncSender<()>>,
    syncer: JoinHandle<io::Result<u64>>,
}

impl SyncAhead {
    /// Starts the syncing thread for `file`.
    pub(crate) fn new(file: NamedTempFile) -> io::Result<Self> {
        let handle = file.as_file().try_clone()?;
        // One request waits at most: a request made while another waits is covered by it,
        // since a sync covers everything written before it starts.
        let (requests, received) = mpsc::sync_channel::<()>(1);
        let syncer = std::thread::Builder::new()
            .name("kk-sync-ahead".into())
            .spawn(move || {
                let mut syncs = 0;
                for () in received {
                    handle.sync_data()?;
                    syncs += 1;
                }
                Ok(syncs)
            })?;
        Ok(Self {
            file,
            written: 0,
            next_sync: SYNC_EVERY,
            requests: Some(requests),
            syncer,
        })
    }

    /// The file once the thread's syncs ended, and how many it made. The first error one of
    /// them met is returned here: a failed sync's error is not reported again by the next
    /// sync of the same file, so dropping it would let the final sync claim the data is on
    /// disk.
    pub(crate) fn finish(self) -> io::Result<(NamedTempFile, u64)> {
        drop(self.requests);
        let syncs = self
            .syncer
            .join()
            .map_err(|_| io::Error::other("the syncing thread panicked"))??;
        Ok((self.file, syncs))
    }
}

impl Write for SyncAhead {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written >= self.next_sync {
            self.next_sync = self.written + SYNC_EVERY;
            if let Some(requests) = &self.requests {
                match requests.try_send(()) {
                    Ok(()) | Err(TrySendError::Full(())) => {}
                    // The thread stopped on an error, which `finish` returns.
                    Err(TrySendError::Disconnected(())) => self.requests = None,
                }
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_synced_while_it_grows_and_keeps_every_byte() {
        let dir = tempfile::tempdir().expect("dir");
        let mut out =
            SyncAhead::new(NamedTempFile::new_in(dir.path()).expect("temp")).expect("start");
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let total = 3 * SYNC_EVERY + 5;
        let mut left = total;
        while left > 0 {
            let n = usize::try_from(left.min(chunk.len() as u64)).expect("fits");
            out.write_all(&chunk[..n]).expect("write");
            left -= n as u64;
        }
        let (file, syncs) = out.finish().expect("finish");
        assert!(syncs >= 1, "no sync was made while the file grew");
        let written = std::fs::read(file.path()).expect("read");
        assert_eq!(written.len() as u64, total);
        assert!(written.chunks(1 << 20).all(|c| c == &chunk[..c.len()]));
    }

    #[test]
    fn a_small_file_needs_no_sync_ahead() {
        let dir = tempfile::tempdir().expect("dir");
        let mut out =
            SyncAhead::new(NamedTempFile::new_in(dir.path()).expect("temp")).expect("start");
        out.write_all(b"small").expect("write");
        let (file, syncs) = out.finish().expect("finish");
        assert_eq!(syncs, 0);
        assert_eq!(std::fs::read(file.path()).expect("read"), b"small");
    }
}
