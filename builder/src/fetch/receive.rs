//! Receiving a response body into a cache [`Download`], for files and image blobs alike.
//!
//! A blocking thread writes and hashes each batch of chunks while the next ones arrive. Done in
//! turn, the socket waited for the sha256 and the sha256 for the socket, so a large file took
//! the sum of both; and writing on an async worker held up the requests beside it.

use futures_util::{Stream, StreamExt as _};

use super::{FetchError, blocking};
use crate::cache::{CacheError, Download};

/// How many chunks that already arrived are handed to the writer at once.
const CHUNKS_PER_BATCH: usize = 16;

/// How many batches wait for the writer while the next ones arrive.
const BATCHES_AHEAD: usize = 4;

/// What a [`receive`] left: the download with every byte that arrived, and the body's error if
/// it broke off.
pub(crate) struct Received<E> {
    /// The download, to resume or finish.
    pub download: Download,
    /// Why the body ended early, if it did.
    pub failure: Option<E>,
}

/// Writes `body` into `download` until the body ends or breaks off, calling `progress` with
/// how far the file has come (the download's offset and what arrived since). The cache's error
/// (a body longer than the size the download expects) ends the receiving at once, without
/// waiting for the rest of the body.
///
/// Dropped midway, the writer finds its channel closed and drops the download, which keeps a
/// resumable partial file.
pub(crate) async fn receive<E>(
    body: impl Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    mut download: Download,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<Result<Received<E>, CacheError>, FetchError> {
    let (batches, mut to_write) = tokio::sync::mpsc::channel::<Vec<bytes::Bytes>>(BATCHES_AHEAD);
    let mut received = download.offset();
    let writer = blocking("writing a download", move || {
        while let Some(batch) = to_write.blocking_recv() {
            for chunk in &batch {
                download.write(chunk)?;
            }
        }
        Ok::<_, CacheError>(download)
    });
    let sending = async move {
        let mut body = body.ready_chunks(CHUNKS_PER_BATCH);
        loop {
            let chunks = tokio::select! {
                chunks = body.next() => chunks,
                // The writer stopped on an error, which it returns: a body longer than the
                // download's size is not waited for any longer.
                () = batches.closed() => return None,
            };
            let (batch, failure) = split_failure(chunks?);
            received += batch.iter().map(|chunk| chunk.len() as u64).sum::<u64>();
            if batches.send(batch).await.is_err() || failure.is_some() {
                return failure;
            }
            progress(received);
        }
    };
    // Polled together: the writer's thread starts before the first batch is sent, and ends once
    // `sending` is done and has dropped its end of the channel.
    let (failure, written) = tokio::join!(sending, writer);
    Ok(written?.map(|download| Received { download, failure }))
}

/// The chunks of a batch up to the first error, and that error.
fn split_failure<E>(chunks: Vec<Result<bytes::Bytes, E>>) -> (Vec<bytes::Bytes>, Option<E>) {
    let mut batch = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        match chunk {
            Ok(chunk) => batch.push(chunk),
            Err(error) => return (batch, Some(error)),
        }
    }
    (batch, None)
}
