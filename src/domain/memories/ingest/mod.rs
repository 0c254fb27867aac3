//! Streaming ingest: cut the upload into frames, redact and compress them
//! in parallel on the frame workers, hash and index them in order, count
//! their tokens as they come ([`counting`]), and store the object where it
//! belongs.
//!
//! Memory stays bounded whatever the size of the upload: `parallelism`
//! frames between the reader and the assembler, one being read and one
//! being assembled, up to five being hashed, and a megabyte of compressed
//! frames not yet written. A frame holds its input, and its redacted
//! content too when redaction changed it.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};

use self::counting::Counting;
use self::frames::{FrameJob, FrameOut, Whole, finish, redo, start};
use crate::domain::DomainError;
use crate::domain::memories::ids::MemoryId;
use crate::domain::memories::locks::{ObjectGuard, ObjectLocks};
use crate::domain::memories::read::seekable;
use crate::domain::redact::{Redactor, Report, redact_bytes};
use crate::domain::summary::{SummaryBuilder, scan_frame};
use crate::domain::tokens::stream::{ContentTokens, content_tokens};
use crate::storage::blob::{BlobStore, BlobWriter};
use crate::storage::meta::{FrameEntry, Layout, MetaStore, ObjectRecord};

mod counting;
mod frames;
mod hashing;
mod later;
mod utf8;

pub use self::later::{CountLater, Later, Pending};

use self::hashing::Hashing;

/// How content is framed and where it is stored.
#[derive(Clone, Debug)]
pub struct IngestConfig {
    /// Content bytes per zstd frame.
    pub frame_bytes: usize,
    /// zstd level.
    pub zstd_level: i32,
    /// Content up to this size is stored as is in the metadata store.
    pub raw_inline_max: usize,
    /// Seekable objects up to this stored size live in the metadata store.
    pub inline_object_max: usize,
    /// Largest accepted upload.
    pub max_upload_bytes: Option<u64>,
    /// Frames handed on by the reader that the assembler has not taken yet
    /// (waiting for a frame worker, being worked on, or done).
    pub parallelism: usize,
    /// Content up to this size gets an exact token count (larger: estimated).
    pub exact_tokens_max: u64,
    /// A put answering first counts content over this size after its
    /// answer ([`CountLater`]).
    pub exact_tokens_after: u64,
}

/// An ingested content: its object (stored, unless inline) and summary input.
pub struct Ingested {
    /// The content hash.
    pub id: MemoryId,
    /// The object record for the metadata store.
    pub object: ObjectRecord,
    /// Summary material gathered on the way.
    pub summary: SummaryBuilder,
    /// Token count of the content.
    pub tokens: ContentTokens,
    /// For blob objects, the object's lock: hold it until the metadata is
    /// committed, so that GC cannot remove the file in between (see [`crate::domain::maintenance::gc`]).
    pub guard: Option<ObjectGuard>,
    /// Secrets replaced in the content before it was stored; `None` when it
    /// was not scanned.
    pub redacted: Option<Report>,
    /// The exact count to make after the answer when `tokens` is the
    /// estimate for now (see [`CountLater`]).
    pub later: Option<Pending>,
}

/// Where compressed frames go: memory first, a blob once they outgrow inline size.
enum Sink {
    Memory(Vec<u8>),
    /// The blob, and stored bytes not written to it yet.
    Blob {
        writer: Box<dyn BlobWriter>,
        pending: Vec<u8>,
    },
}

/// Stored bytes gathered before a write to the blob: one write (a hand-off
/// to the blocking pool, or a part of an upload) per megabyte, not per frame.
const WRITE_BATCH: usize = 1 << 20;

/// Ordered consumer state: hash, frame index, summary, stored bytes.
struct Assembly<'a> {
    config: &'a IngestConfig,
    blobs: &'a dyn BlobStore,
    meta: &'a dyn MetaStore,
    locks: &'a ObjectLocks,
    hashing: Hashing,
    frames: Vec<FrameEntry>,
    table: Vec<(u32, u32)>,
    content_len: u64,
    stored_len: u64,
    newlines: u64,
    last_byte: Option<u8>,
    summary: SummaryBuilder,
    sink: Sink,
    /// The content's token count, under way.
    counting: Counting,
}

/// Reads `body` to its end and stores it; returns the object to record.
/// With `redact`, secrets are replaced on the way (see [`crate::domain::redact`]):
/// what is stored, hashed and counted is the redacted content.
///
/// Two halves run concurrently: the reader cuts the body into frames and
/// starts each one's work (redaction, compression) at once; the assembler
/// takes the results in order, checks that each frame's redaction could
/// start afresh (else has it redone), and hashes, indexes and writes them.
/// A bounded channel of `parallelism` frames between them bounds the memory
/// held.
pub async fn ingest<S, E>(
    body: S,
    redact: bool,
    blobs: &dyn BlobStore,
    meta: &dyn MetaStore,
    locks: &ObjectLocks,
    config: &IngestConfig,
    later: Option<&CountLater>,
) -> Result<Ingested, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let (jobs, mut ready) = tokio::sync::mpsc::channel(config.parallelism.max(1));
    let mut assembly = Assembly::new(config, blobs, meta, locks, later.is_some());
    // `async move` takes the receiver: when assembly fails, the receiver is
    // dropped with it and the reader's next send fails instead of waiting.
    let assembly_ref = &mut assembly;
    let assemble = async move {
        let mut report = Report::default();
        // The redactor of the frame before, when it ended inside a line or key block.
        let mut carried: Option<Box<Redactor>> = None;
        let level = config.zstd_level;
        while let Some(job) = ready.recv().await {
            let mut out = match job {
                FrameJob::Deferred { input, last } => {
                    redo(input, carried.take().unwrap_or_default(), last, level).await?
                }
                job => {
                    let out = finish(job).await?;
                    match carried.take() {
                        // Redacted afresh, but the frame before left a line open: again.
                        Some(redactor) => redo(out.input, redactor, out.last, level).await?,
                        None => out,
                    }
                }
            };
            if let Some(mut redactor) = out.redactor.take() {
                report.merge(&redactor.take_report());
                if !redactor.is_clean() {
                    carried = Some(redactor);
                }
            }
            if !out.content.is_empty() {
                assembly_ref.add(out).await?;
            }
        }
        Ok::<_, DomainError>(report)
    };
    // A content up to this size is counted before the answer.
    let count_now = later.map_or(u64::MAX, CountLater::over);
    let read = read_frames(body, redact, count_now, config, jobs);
    let (read, assembled) = tokio::join!(read, assemble);
    if let Some((small, report)) = read? {
        let mut ingested = raw(small, config.exact_tokens_max);
        ingested.redacted = redact.then_some(report);
        return Ok(ingested);
    }
    let report = assembled?;
    let mut ingested = assembly.finish(later).await?;
    ingested.redacted = redact.then_some(report);
    Ok(ingested)
}

/// Cuts `body` into frames and hands them to the assembler; returns the
/// content itself (redacted, with what was redacted) when it is small
/// enough to be stored raw (no frame sent).
///
/// Frames hold `frame_bytes` of input. When redacting, a frame ends at the
/// last line end within that size, so that the next frame can be redacted
/// on its own; a frame cut inside a line (one longer than a frame) makes the
/// next one wait for its redactor ([`FrameJob::Deferred`]).
///
/// A lone frame is hashed by its worker, and counted there too when it is
/// at most `count_now` bytes (the put answers after its count).
async fn read_frames<S, E>(
    mut body: S,
    redact: bool,
    count_now: u64,
    config: &IngestConfig,
    jobs: tokio::sync::mpsc::Sender<FrameJob>,
) -> Result<Option<(Bytes, Report)>, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let frame_bytes = config.frame_bytes.max(1);
    let level = config.zstd_level;
    let mut buf = BytesMut::with_capacity(frame_bytes.min(1 << 16));
    let mut total: u64 = 0;
    let mut sent = false;
    // The last frame sent was cut inside a line.
    let mut open_line = false;
    let job = |input: Bytes, open_line: bool, last: bool, whole: Whole| {
        if !redact {
            start(input, None, last, level, whole)
        } else if open_line {
            FrameJob::Deferred { input, last }
        } else {
            start(input, Some(Box::default()), last, level, whole)
        }
    };
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| DomainError::Body(e.to_string()))?;
        total += chunk.len() as u64;
        if let Some(limit) = config.max_upload_bytes.filter(|limit| total > *limit) {
            return Err(DomainError::PayloadTooLarge { limit });
        }
        while !chunk.is_empty() {
            let take = (frame_bytes - buf.len()).min(chunk.len());
            buf.extend_from_slice(&chunk.split_to(take));
            if buf.len() == frame_bytes {
                // When redacting, cut after the last line end (none: inside a line).
                let line_end = if redact {
                    memchr::memrchr(b'\n', &buf).map(|i| i + 1)
                } else {
                    None
                };
                let input = buf.split_to(line_end.unwrap_or(frame_bytes)).freeze();
                // The next frame's buffer in one allocation, the rest of the line copied in.
                buf.reserve(frame_bytes - buf.len());
                let frame = job(input, open_line, false, Whole::default());
                open_line = redact && line_end.is_none();
                sent = true;
                if jobs.send(frame).await.is_err() {
                    return Ok(None); // the assembler failed; it reports why
                }
            }
        }
    }
    if !sent && buf.len() <= config.raw_inline_max {
        if !redact {
            return Ok(Some((buf.freeze(), Report::default())));
        }
        // Small content, all there is: redact it here.
        let (out, report) = redact_bytes(&buf);
        if out.len() <= config.raw_inline_max {
            return Ok(Some((Bytes::from(out), report)));
        }
        // Markers made it longer than raw content may be: it goes in a frame.
    }
    // The last frame; when redacting, sent even empty, to finish the redactor
    // (a key block or a line may still be open).
    if !buf.is_empty() || (redact && sent) {
        // A lone frame is hashed (and counted) by its worker too: one
        // hand-off instead of two or three.
        let whole = Whole {
            hash: !sent,
            count_max: (!sent
                && buf.len() as u64 <= count_now
                && buf.len() < counting::ONE_PASS_MAX)
                .then_some(config.exact_tokens_max),
        };
        let frame = job(buf.freeze(), open_line, true, whole);
        let _ = jobs.send(frame).await;
    }
    Ok(None)
}

/// Makes a written object durable, unless the content is already stored.
///
/// An object row names the file that is authoritative for its content (its
/// frame index describes that file): then ours is dropped. Without a row, any
/// file already under the name is a leftover (a crash between link and
/// metadata commit), possibly encoded with other settings: ours replaces it.
///
/// Answers the object's lock, held from the check on: the caller keeps it
/// until its metadata is committed, so GC cannot remove the file meanwhile.
async fn settle(
    meta: &dyn MetaStore,
    locks: &ObjectLocks,
    writer: Box<dyn BlobWriter>,
    id: &MemoryId,
) -> Result<ObjectGuard, DomainError> {
    let guard = locks.lock(meta, id.as_str()).await?;
    if meta.stored_object(id.as_str()).await?.is_some() {
        return Ok(guard); // dropping the writer removes its temp file
    }
    writer.commit(id.as_str()).await?;
    Ok(guard)
}

/// Small content: stored as is, no frames.
fn raw(content: Bytes, exact_tokens_max: u64) -> Ingested {
    let scan = scan_frame(&content);
    let mut summary = SummaryBuilder::default();
    summary.add_frame(&content, &scan, 1);
    let lines = line_count(scan.newlines, content.last().copied());
    let id = MemoryId::of_content(&content);
    Ingested {
        object: ObjectRecord {
            hash: id.as_str().to_owned(),
            bytes: content.len() as u64,
            lines,
            stored_bytes: content.len() as u64,
            layout: Layout::Raw,
            data: Some(content.to_vec()),
            frames: Vec::new(),
        },
        id,
        summary,
        tokens: content_tokens(&[&content], None, exact_tokens_max),
        guard: None,
        redacted: None,
        later: None,
    }
}

/// Lines of content with `newlines` newlines ending in `last_byte`.
pub fn line_count(newlines: u64, last_byte: Option<u8>) -> u64 {
    newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'))
}

impl<'a> Assembly<'a> {
    /// With `keep`, the frames are kept for a count after the answer.
    fn new(
        config: &'a IngestConfig,
        blobs: &'a dyn BlobStore,
        meta: &'a dyn MetaStore,
        locks: &'a ObjectLocks,
        keep: bool,
    ) -> Self {
        Self {
            config,
            blobs,
            meta,
            locks,
            hashing: Hashing::Done(Sha256::new()),
            frames: Vec::new(),
            table: Vec::new(),
            content_len: 0,
            stored_len: 0,
            newlines: 0,
            last_byte: None,
            summary: SummaryBuilder::default(),
            sink: Sink::Memory(Vec::new()),
            counting: Counting::new(config.exact_tokens_max, keep),
        }
    }

    /// Takes the next frame in content order.
    async fn add(&mut self, mut out: FrameOut) -> Result<(), DomainError> {
        let first_line = self.newlines + 1;
        match out.hashed.take() {
            Some(done) => self.hashing = Hashing::Done(done),
            None => self.hashing.update(out.content.clone()).await?,
        }
        self.summary.add_frame(&out.content, &out.scan, first_line);
        let (content_len, stored_len) = (out.content.len(), out.compressed.len());
        self.frames.push(FrameEntry {
            content_offset: self.content_len,
            content_len: u32::try_from(content_len).unwrap_or(u32::MAX),
            first_line,
            stored_offset: self.stored_len,
            stored_len: u32::try_from(stored_len).unwrap_or(u32::MAX),
            pages: std::mem::take(&mut out.pages),
        });
        self.table.push((
            u32::try_from(stored_len).unwrap_or(u32::MAX),
            u32::try_from(content_len).unwrap_or(u32::MAX),
        ));
        self.content_len += content_len as u64;
        self.stored_len += stored_len as u64;
        match out.counted {
            Some(counted) => self.counting.add_counted(&out.content, counted),
            None => self.counting.add(&out.content),
        }
        self.newlines += out.scan.newlines;
        self.last_byte = out.content.last().copied().or(self.last_byte);
        self.write(out.compressed).await
    }

    /// Appends stored bytes, moving to a blob once past the inline size;
    /// writes to the blob go in batches of [`WRITE_BATCH`].
    async fn write(&mut self, compressed: Vec<u8>) -> Result<(), DomainError> {
        if let Sink::Memory(buffer) = &mut self.sink {
            if buffer.len() + compressed.len() <= self.config.inline_object_max {
                buffer.extend_from_slice(&compressed);
                return Ok(());
            }
            let writer = self.blobs.create().await?;
            let pending = std::mem::take(buffer);
            self.sink = Sink::Blob { writer, pending };
        }
        if let Sink::Blob { writer, pending } = &mut self.sink {
            if pending.is_empty() {
                *pending = compressed;
            } else {
                pending.extend_from_slice(&compressed);
            }
            if pending.len() >= WRITE_BATCH {
                writer.write(Bytes::from(std::mem::take(pending))).await?;
            }
        }
        Ok(())
    }

    /// Appends the seek table and makes the object durable; with room in
    /// `later` for its count, answers the estimate and leaves the count under way.
    async fn finish(self, later: Option<&CountLater>) -> Result<Ingested, DomainError> {
        let digest = self.hashing.finish().await?.finalize();
        let id = MemoryId::from_digest(&digest);
        let table = seekable::seek_table(&self.table);
        let stored_bytes = self.stored_len + table.len() as u64;
        let (config, blobs, meta, locks) = (self.config, self.blobs, self.meta, self.locks);
        let (sink, counting) = (self.sink, self.counting);
        // The object is made durable while the last counts finish.
        let store = async {
            Ok::<_, DomainError>(match sink {
                Sink::Memory(mut buffer)
                    if buffer.len() + table.len() <= config.inline_object_max =>
                {
                    buffer.extend_from_slice(&table);
                    (Layout::Inline, Some(buffer), None)
                }
                Sink::Memory(buffer) => {
                    let mut writer = blobs.create().await?;
                    writer.write(Bytes::from(buffer)).await?;
                    writer.write(Bytes::from(table)).await?;
                    let guard = settle(meta, locks, writer, &id).await?;
                    (Layout::Blob, None, Some(guard))
                }
                Sink::Blob {
                    mut writer,
                    mut pending,
                } => {
                    pending.extend_from_slice(&table);
                    writer.write(Bytes::from(pending)).await?;
                    let guard = settle(meta, locks, writer, &id).await?;
                    (Layout::Blob, None, Some(guard))
                }
            })
        };
        let (len, digest) = (self.content_len, <[u8; 32]>::from(digest));
        let later = later
            .zip(counting.kept())
            .and_then(|(later, kept)| later.reserve(kept, len, digest, counting.max()));
        let (tokens, stored) = match later {
            Some(_) => (ContentTokens::estimated(len), store.await),
            None => {
                let (tokens, stored) = tokio::join!(counting.finish(digest), store);
                (tokens?, stored)
            }
        };
        let (layout, data, guard) = stored?;
        Ok(Ingested {
            object: ObjectRecord {
                hash: id.as_str().to_owned(),
                bytes: self.content_len,
                lines: line_count(self.newlines, self.last_byte),
                stored_bytes,
                layout,
                data,
                frames: self.frames,
            },
            id,
            summary: self.summary,
            tokens,
            guard,
            redacted: None,
            later,
        })
    }
}
