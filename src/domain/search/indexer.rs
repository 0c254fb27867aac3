//! The background indexer: takes objects from the persisted pending queue,
//! reads their frames through the reader and adds one full-text row per
//! frame. Puts never wait for it; `/v1/stats` shows how far behind it is.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::DomainError;
use crate::domain::foreground::{Foreground, GiveWay};
use crate::domain::memories::read::ObjectReader;
use crate::storage::blob::BlobStore;
use crate::storage::meta::{FrameBatch, FrameLines, IndexedFrame, MetaStore};

/// Objects taken from the queue at a time.
const PENDING_BATCH: u32 = 16;
/// Text sent to the writer in one command: large objects go in several, so a
/// put queued behind the indexer waits for little.
const TEXT_PER_WRITE: usize = 64 << 10;
/// How much of the next frame completes a frame's last line.
const CONTINUATION_BYTES: usize = 16 << 10;
/// Content bytes looked at to tell binary content (a NUL byte) from text.
const BINARY_SNIFF: usize = 8 << 10;
/// Pause between looks at an empty queue.
pub const IDLE_POLL: Duration = Duration::from_millis(100);
/// Wait after a put wakes the indexer, for the puts that come with it.
const GATHER: Duration = Duration::from_millis(25);
/// How the indexer gives way to requests before each frame of an object over
/// [`SMALL_OBJECT`]: it waits for 10 ms without one, for at most 150 ms.
/// Clients that send request after request (a benchmark, a batch import)
/// keep it waiting, and it then indexes one frame every 150 ms and catches
/// up in the next lull; agents, whose requests come between model calls,
/// barely delay it. Its frame reads, decoding and full-text writes would
/// otherwise share the cores with the requests. (A put wakes it: small
/// puts are searchable within ~250 ms under steady traffic, see
/// `bench/freshness.py`.)
const GIVE_WAY: GiveWay = GiveWay {
    quiet: Duration::from_millis(10),
    max_wait: Duration::from_millis(150),
};
/// Objects up to this size are indexed without giving way: their text costs
/// a fraction of what their put cost, and an agent searches them next (a
/// proxied exchange's offloads are this size).
const SMALL_OBJECT: u64 = 256 << 10;
/// Pause after a storage error before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The text of one frame as the index takes it.
pub(super) struct FrameText {
    /// The line number of the frame's first byte.
    pub first_line: u64,
    /// The text (lossy UTF-8).
    pub text: String,
    /// The frame's content ends with a newline.
    pub ends_line: bool,
    /// Every line beginning in the frame is whole in `text`.
    pub whole_lines: bool,
}

/// The text indexed for frame `idx`: its content plus the rest of its last
/// line from the next frame (up to [`CONTINUATION_BYTES`]), so no word is
/// cut at a frame boundary; with `lead`, also the start of its first line
/// from the previous frame (for hits, whose text is then the whole line).
/// `None` for binary content.
pub(super) async fn frame_text(
    reader: &mut ObjectReader,
    idx: usize,
    lead: bool,
) -> Result<Option<FrameText>, DomainError> {
    let Some(entry) = reader.frame_entry(idx) else {
        return Ok(None);
    };
    let (first_line, len) = (entry.first_line, entry.content_len as usize);
    let data = reader.frame(idx, len).await?;
    if memchr::memchr(0, &data[..data.len().min(BINARY_SNIFF)]).is_some() {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(data.len());
    if lead && idx > 0 && !data.starts_with(b"\n") {
        let whole = reader
            .frame_entry(idx - 1)
            .map_or(0, |e| e.content_len as usize);
        let previous = reader.frame(idx - 1, whole).await?;
        let from = previous.len().saturating_sub(CONTINUATION_BYTES);
        let start = memchr::memrchr(b'\n', &previous[from..]).map_or(from, |p| from + p + 1);
        bytes.extend_from_slice(&previous[start..]);
    }
    bytes.extend_from_slice(&data);
    let ends_line = data.ends_with(b"\n");
    let mut whole_lines = true;
    if !ends_line && reader.frame_entry(idx + 1).is_some() {
        let next = reader.frame(idx + 1, CONTINUATION_BYTES).await?;
        let upto = next.len().min(CONTINUATION_BYTES);
        let end = memchr::memchr(b'\n', &next[..upto]);
        // Whole when the line ends in the part taken, or the content does.
        let next_len = reader
            .frame_entry(idx + 1)
            .map_or(0, |e| e.content_len as usize);
        whole_lines = end.is_some() || (upto == next_len && reader.frame_entry(idx + 2).is_none());
        bytes.extend_from_slice(&next[..end.unwrap_or(upto)]);
    }
    Ok(Some(FrameText {
        first_line,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        ends_line,
        whole_lines,
    }))
}

/// Indexes pending objects until the queue is empty or the task is stopped.
pub(super) async fn run(
    meta: Arc<dyn MetaStore>,
    blobs: Arc<dyn BlobStore>,
    wake: Arc<tokio::sync::Notify>,
    foreground: Arc<Foreground>,
) {
    loop {
        match step(meta.as_ref(), &blobs, &foreground).await {
            Ok(true) => {}
            Ok(false) => {
                if tokio::time::timeout(IDLE_POLL, wake.notified())
                    .await
                    .is_ok()
                {
                    // Woken by a put: let the rest of its burst (a proxied
                    // request's offloads, a batch) arrive, so they share one
                    // index commit instead of one each.
                    tokio::time::sleep(GATHER).await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "search indexing failed; retrying");
                tokio::time::sleep(RETRY_AFTER).await;
            }
        }
    }
}

/// Indexes one batch of pending objects; false when there was none.
async fn step(
    meta: &dyn MetaStore,
    blobs: &Arc<dyn BlobStore>,
    foreground: &Foreground,
) -> Result<bool, DomainError> {
    let pending = meta.search_pending(PENDING_BATCH).await?;
    for object in &pending {
        index_object(meta, blobs, &object.hash, foreground).await?;
    }
    Ok(!pending.is_empty())
}

/// Indexes every frame of one object, then takes it off the queue.
#[tracing::instrument(skip_all, fields(object.hash = hash))]
async fn index_object(
    meta: &dyn MetaStore,
    blobs: &Arc<dyn BlobStore>,
    hash: &str,
    foreground: &Foreground,
) -> Result<(), DomainError> {
    let mut batch = FrameBatch {
        hash: hash.to_owned(),
        first: true,
        ..FrameBatch::default()
    };
    let Some(object) = meta.object(hash).await? else {
        tracing::debug!("object gone (collected) before its turn; nothing to index");
        batch.done = true;
        meta.index_frames(batch).await?;
        return Ok(());
    };
    let size = object.bytes;
    let mut reader = ObjectReader::new(object, blobs.clone()).sequential(size);
    let frames = reader.frame_count();
    let mut text_bytes = 0;
    let mut starts_line = true;
    for idx in 0..frames {
        if size > SMALL_OBJECT {
            foreground.give_way(GIVE_WAY).await;
        }
        let frame = match frame_text(&mut reader, idx, false).await {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                tracing::debug!(frame = idx, "binary content: indexed no further");
                break;
            }
            Err(DomainError::Corrupt { detail, .. }) => {
                tracing::warn!(%detail, "object fails verification; indexed no further");
                break;
            }
            Err(e) => return Err(e),
        };
        text_bytes += frame.text.len();
        batch.frames.push(IndexedFrame {
            idx: u32::try_from(idx).unwrap_or(u32::MAX),
            text: frame.text,
            lines: FrameLines {
                starts_line,
                whole_lines: frame.whole_lines,
            },
        });
        starts_line = frame.ends_line;
        if text_bytes >= TEXT_PER_WRITE {
            text_bytes = 0;
            let full = FrameBatch {
                hash: hash.to_owned(),
                frames: std::mem::take(&mut batch.frames),
                first: batch.first,
                done: false,
            };
            batch.first = false;
            meta.index_frames(full).await?;
        }
    }
    batch.done = true;
    meta.index_frames(batch).await?;
    Ok(())
}
