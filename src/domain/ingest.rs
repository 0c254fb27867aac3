//! Streaming ingest: cut the upload into frames, compress them in parallel,
//! hash and index them in order, and store the object where it belongs.
//!
//! Memory stays bounded: at most `parallelism + 3` frames of content are held
//! at once, whatever the size of the upload.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};

use super::DomainError;
use super::gc::{ObjectGuard, ObjectLocks};
use super::ids::MemoryId;
use super::seekable;
use super::summary::{FrameScan, SummaryBuilder, scan_frame};
use super::tokens::stream::{ContentTokens, content_tokens};
use crate::storage::StorageError;
use crate::storage::blob::{BlobStore, BlobWriter};
use crate::storage::meta::{FrameEntry, Layout, MetaStore, ObjectRecord, PageEntry};

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
    /// Frames in flight at once (being compressed, or waiting to be written).
    pub parallelism: usize,
    /// Content up to this size gets an exact token count (larger: estimated).
    pub exact_tokens_max: u64,
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
    /// committed, so that GC cannot remove the file in between (see [`super::gc`]).
    pub guard: Option<ObjectGuard>,
}

/// One compressed frame, back from a worker.
struct FrameOut {
    content: Bytes,
    compressed: Vec<u8>,
    scan: FrameScan,
    pages: Vec<PageEntry>,
    /// The hash of the content so far, when the worker could compute it (a lone frame).
    hashed: Option<Sha256>,
}

/// Where compressed frames go: memory first, a blob once they outgrow inline size.
enum Sink {
    Memory(Vec<u8>),
    Blob(Box<dyn BlobWriter>),
}

/// Ordered consumer state: hash, frame index, summary, stored bytes.
struct Assembly<'a> {
    config: &'a IngestConfig,
    blobs: &'a dyn BlobStore,
    meta: &'a dyn MetaStore,
    locks: &'a ObjectLocks,
    hasher: Option<Sha256>,
    frames: Vec<FrameEntry>,
    table: Vec<(u32, u32)>,
    content_len: u64,
    stored_len: u64,
    newlines: u64,
    last_byte: Option<u8>,
    summary: SummaryBuilder,
    sink: Sink,
    /// The frames so far while they fit the exact token count's size limit.
    to_count: Vec<Bytes>,
}

/// Reads `body` to its end and stores it; returns the object to record.
///
/// Two halves run concurrently: the reader cuts the body into frames and
/// starts each one's compression at once; the assembler takes the results in
/// order and hashes, indexes and writes them. A bounded channel of
/// `parallelism` frames between them bounds the memory held.
pub async fn ingest<S, E>(
    body: S,
    blobs: &dyn BlobStore,
    meta: &dyn MetaStore,
    locks: &ObjectLocks,
    config: &IngestConfig,
) -> Result<Ingested, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let (jobs, mut ready) = tokio::sync::mpsc::channel(config.parallelism.max(1));
    let mut assembly = Assembly::new(config, blobs, meta, locks);
    // `async move` takes the receiver: when assembly fails, the receiver is
    // dropped with it and the reader's next send fails instead of waiting.
    let assembly_ref = &mut assembly;
    let assemble = async move {
        while let Some(job) = ready.recv().await {
            assembly_ref.add(finish(job).await?).await?;
        }
        Ok::<_, DomainError>(())
    };
    let (read, assembled) = tokio::join!(read_frames(body, config, jobs), assemble);
    if let Some(small) = read? {
        return Ok(raw(small, config.exact_tokens_max));
    }
    assembled?;
    assembly.finish().await
}

/// A frame's compression: started on the blocking pool, or already done (small frames).
enum FrameJob {
    Running(tokio::task::JoinHandle<std::io::Result<FrameOut>>),
    Done(Box<std::io::Result<FrameOut>>),
}

/// Cuts `body` into frames and hands them to the assembler; returns the
/// content itself when it is small enough to be stored raw (no frame sent).
async fn read_frames<S, E>(
    mut body: S,
    config: &IngestConfig,
    jobs: tokio::sync::mpsc::Sender<FrameJob>,
) -> Result<Option<Bytes>, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let frame_bytes = config.frame_bytes.max(1);
    let mut buf = BytesMut::with_capacity(frame_bytes.min(1 << 16));
    let mut total: u64 = 0;
    let mut sent = false;
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
                sent = true;
                if jobs
                    .send(start(buf.split().freeze(), config.zstd_level, false))
                    .await
                    .is_err()
                {
                    return Ok(None); // the assembler failed; it reports why
                }
            }
        }
    }
    if !sent && buf.len() <= config.raw_inline_max {
        return Ok(Some(buf.freeze()));
    }
    if !buf.is_empty() {
        // A lone frame is hashed by its worker too: one hand-off instead of two.
        let _ = jobs
            .send(start(buf.freeze(), config.zstd_level, !sent))
            .await;
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
    }
}

/// Tokens of a content of `bytes` bytes: estimated when it is over the
/// exact-count limit, else counted over its `frames` off the async workers
/// (BPE runs ~10 MB/s).
async fn count_tokens(
    frames: Vec<Bytes>,
    bytes: u64,
    digest: [u8; 32],
    config: &IngestConfig,
) -> Result<ContentTokens, DomainError> {
    let max = config.exact_tokens_max;
    if bytes > max {
        return Ok(ContentTokens::estimated(bytes));
    }
    tokio::task::spawn_blocking(move || content_tokens(&frames, Some(digest), max))
        .await
        .map_err(|e| StorageError::Io(std::io::Error::other(e)).into())
}

/// Lines of content with `newlines` newlines ending in `last_byte`.
pub fn line_count(newlines: u64, last_byte: Option<u8>) -> u64 {
    newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'))
}

/// Frames up to this size are compressed right on the async worker: well
/// under 100 µs of work, cheaper than a hand-off to the blocking pool.
const INLINE_WORK_MAX: usize = 16 << 10;

/// Starts compressing and scanning a frame (and hashing it if `hash`): on
/// the blocking pool, or right here when it is small.
fn start(content: Bytes, level: i32, hash: bool) -> FrameJob {
    let small = content.len() <= INLINE_WORK_MAX;
    let work = move || {
        let compressed = seekable::compress_frame(&content, level)?;
        let scan = scan_frame(&content);
        let pages = PageEntry::of(&content);
        let hashed = hash.then(|| Sha256::new_with_prefix(&content));
        Ok(FrameOut {
            content,
            compressed,
            scan,
            pages,
            hashed,
        })
    };
    if small {
        FrameJob::Done(Box::new(work()))
    } else {
        FrameJob::Running(tokio::task::spawn_blocking(work))
    }
}

/// Waits for a frame's compression.
async fn finish(job: FrameJob) -> Result<FrameOut, DomainError> {
    let done = match job {
        FrameJob::Done(done) => *done,
        FrameJob::Running(task) => task
            .await
            .map_err(|e| StorageError::Io(std::io::Error::other(e)))?,
    };
    done.map_err(|e| DomainError::Storage(e.into()))
}

impl<'a> Assembly<'a> {
    fn new(
        config: &'a IngestConfig,
        blobs: &'a dyn BlobStore,
        meta: &'a dyn MetaStore,
        locks: &'a ObjectLocks,
    ) -> Self {
        Self {
            config,
            blobs,
            meta,
            locks,
            hasher: Some(Sha256::new()),
            frames: Vec::new(),
            table: Vec::new(),
            content_len: 0,
            stored_len: 0,
            newlines: 0,
            last_byte: None,
            summary: SummaryBuilder::default(),
            sink: Sink::Memory(Vec::new()),
            to_count: Vec::new(),
        }
    }

    /// Takes the next frame in content order.
    async fn add(&mut self, mut out: FrameOut) -> Result<(), DomainError> {
        let first_line = self.newlines + 1;
        let hasher = match out.hashed.take() {
            Some(done) => futures::future::Either::Left(std::future::ready(Ok(done))),
            None => {
                let mut hasher = self.hasher.take().unwrap_or_default();
                let content = out.content.clone();
                futures::future::Either::Right(tokio::task::spawn_blocking(move || {
                    hasher.update(&content);
                    hasher
                }))
            }
        };
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
        if self.content_len <= self.config.exact_tokens_max {
            self.to_count.push(out.content.clone());
        } else {
            self.to_count = Vec::new();
        }
        self.newlines += out.scan.newlines;
        self.last_byte = out.content.last().copied().or(self.last_byte);
        self.write(out.compressed).await?;
        self.hasher = Some(
            hasher
                .await
                .map_err(|e| StorageError::Io(std::io::Error::other(e)))?,
        );
        Ok(())
    }

    /// Appends stored bytes, moving to a blob once past the inline size.
    async fn write(&mut self, compressed: Vec<u8>) -> Result<(), DomainError> {
        if let Sink::Memory(buffer) = &mut self.sink {
            if buffer.len() + compressed.len() <= self.config.inline_object_max {
                buffer.extend_from_slice(&compressed);
                return Ok(());
            }
            let mut writer = self.blobs.create().await?;
            writer.write(Bytes::from(std::mem::take(buffer))).await?;
            self.sink = Sink::Blob(writer);
        }
        if let Sink::Blob(writer) = &mut self.sink {
            writer.write(Bytes::from(compressed)).await?;
        }
        Ok(())
    }

    /// Appends the seek table and makes the object durable.
    async fn finish(mut self) -> Result<Ingested, DomainError> {
        let digest = self.hasher.take().unwrap_or_default().finalize();
        let id = MemoryId::from_digest(&digest);
        let tokens =
            count_tokens(self.to_count, self.content_len, digest.into(), self.config).await?;
        let table = seekable::seek_table(&self.table);
        let stored_bytes = self.stored_len + table.len() as u64;
        let (layout, data, guard) = match self.sink {
            Sink::Memory(mut buffer)
                if buffer.len() + table.len() <= self.config.inline_object_max =>
            {
                buffer.extend_from_slice(&table);
                (Layout::Inline, Some(buffer), None)
            }
            Sink::Memory(buffer) => {
                let mut writer = self.blobs.create().await?;
                writer.write(Bytes::from(buffer)).await?;
                writer.write(Bytes::from(table)).await?;
                let guard = settle(self.meta, self.locks, writer, &id).await?;
                (Layout::Blob, None, Some(guard))
            }
            Sink::Blob(mut writer) => {
                writer.write(Bytes::from(table)).await?;
                let guard = settle(self.meta, self.locks, writer, &id).await?;
                (Layout::Blob, None, Some(guard))
            }
        };
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
        })
    }
}
