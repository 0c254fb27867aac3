//! Reading stored objects: frame lookup by offset or line, decoding with
//! verification, and byte ranges across frames.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::domain::DomainError;
use crate::domain::memories::read::frame_cache::FrameCache;
use crate::storage::StorageError;
use crate::storage::blob::{BlobStore, RangeTransform};
use crate::storage::meta::{FrameEntry, Layout, ObjectRecord, PAGE_BYTES};

pub mod content;
pub mod frame_cache;
pub mod seekable;
pub mod slicing;
pub mod token_slice;

/// Content bytes of frames a sequential reader fetches with one store request.
const READ_AHEAD_BYTES: u64 = 4 << 20;

/// Reads one object, keeping the last decoded frames for the request's next look.
pub struct ObjectReader {
    object: Arc<ObjectRecord>,
    blobs: Arc<dyn BlobStore>,
    frame_cache: Option<Arc<FrameCache>>,
    /// Raw content reads as one frame holding everything.
    raw: Option<[FrameEntry; 1]>,
    decoded: Vec<(usize, Bytes)>,
    /// For sequential reads: fetch frames ahead up to this content offset.
    read_ahead_to: Option<u64>,
    /// Frames fetched ahead, in index order, each decoded or why it failed.
    ahead: VecDeque<(usize, Result<Bytes, String>)>,
}

impl ObjectReader {
    /// A reader over `object`.
    pub fn new(object: Arc<ObjectRecord>, blobs: Arc<dyn BlobStore>) -> Self {
        let raw = (object.layout == Layout::Raw).then(|| {
            [FrameEntry {
                content_offset: 0,
                content_len: u32::try_from(object.bytes).unwrap_or(u32::MAX),
                first_line: 1,
                stored_offset: 0,
                stored_len: 0,
                pages: Vec::new(),
            }]
        });
        Self {
            object,
            blobs,
            frame_cache: None,
            raw,
            decoded: Vec::with_capacity(2),
            read_ahead_to: None,
            ahead: VecDeque::new(),
        }
    }

    /// For a reader that goes through the frames in order up to content
    /// offset `end` (whole-content streams, export, the indexer): frames are
    /// fetched several at a time, up to 4 MiB of content per store request,
    /// instead of one request per frame (which costs a round trip each on S3).
    #[must_use]
    pub fn sequential(mut self, end: u64) -> Self {
        self.read_ahead_to = Some(end);
        self
    }

    /// A reader over the same object and store with nothing read yet and no
    /// frame cache, for reads that go on beside this one's.
    #[must_use]
    pub fn fresh(&self) -> Self {
        Self::new(self.object.clone(), self.blobs.clone())
    }

    /// The content hash of the object read.
    pub fn hash(&self) -> &str {
        &self.object.hash
    }

    /// Whether each store read is a network round trip (see [`BlobStore::remote`]).
    pub fn remote(&self) -> bool {
        self.blobs.remote()
    }

    /// Number of frames (raw content is one).
    pub fn frame_count(&self) -> usize {
        self.frames().len()
    }

    /// Shares decoded frames through `cache` (readers of hot paths; bulk
    /// readers such as the indexer or export leave it out, not to flush it).
    #[must_use]
    pub fn with_frame_cache(mut self, cache: Arc<FrameCache>) -> Self {
        self.frame_cache = Some(cache);
        self
    }

    /// The frame index (borrowed from the cached object: nothing is copied per request).
    fn frames(&self) -> &[FrameEntry] {
        match &self.raw {
            Some(raw) => raw,
            None => &self.object.frames,
        }
    }

    /// Content length.
    pub fn size(&self) -> u64 {
        self.object.bytes
    }

    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.object.lines
    }

    fn corrupt(&self, detail: impl Into<String>) -> DomainError {
        DomainError::Corrupt {
            id: self.object.hash.clone(),
            detail: detail.into(),
        }
    }

    /// Index of the frame holding content byte `offset` (the last frame for the end).
    pub fn frame_at_offset(&self, offset: u64) -> usize {
        self.frames()
            .partition_point(|f| f.content_offset <= offset)
            .saturating_sub(1)
    }

    /// Index of the frame holding the `k`-th newline (k ≥ 1).
    fn frame_with_newline(&self, k: u64) -> usize {
        self.frames()
            .partition_point(|f| f.first_line <= k)
            .saturating_sub(1)
    }

    /// The decoded, verified content of frame `idx`: at least its first
    /// `need` bytes (rounded up to whole pages), or all of it.
    pub async fn frame(&mut self, idx: usize, need: usize) -> Result<Bytes, DomainError> {
        let whole = self.frames().get(idx).map_or(0, |f| f.content_len as usize);
        if let Some((_, data)) = self
            .decoded
            .iter()
            .find(|(i, d)| *i == idx && d.len() >= need.min(whole))
        {
            return Ok(data.clone());
        }
        let entry = self
            .frames()
            .get(idx)
            .cloned()
            .ok_or_else(|| self.corrupt(format!("frame {idx} is not in the index")))?;
        if self.object.layout == Layout::Raw {
            return self.raw_content();
        }
        if self.read_ahead_to.is_some() && self.object.layout == Layout::Blob {
            if !self.ahead.iter().any(|(i, _)| *i == idx) {
                self.ahead.clear();
                self.fetch_ahead(idx).await?;
            }
            // Nothing fetched for a lone frame: it is read below, through the caches.
            while let Some((i, data)) = self.ahead.pop_front() {
                if i == idx {
                    let data = data.map_err(|detail| {
                        self.corrupt(format!(
                            "frame at content offset {} failed verification: {detail}",
                            entry.content_offset
                        ))
                    })?;
                    self.remember(idx, data.clone());
                    return Ok(data);
                }
            }
        }
        let frame_len = entry.content_len as usize;
        if let Some(data) = self
            .frame_cache
            .as_ref()
            .and_then(|c| c.get(&self.object.hash, entry.content_offset, need, frame_len))
        {
            self.remember(idx, data.clone());
            return Ok(data);
        }
        let (offset, stored_offset, stored_len) =
            (entry.content_offset, entry.stored_offset, entry.stored_len);
        let decode: RangeTransform = std::sync::Arc::new(move |frame| {
            seekable::decompress_prefix(&frame, entry.content_len as usize, need, &entry.pages)
                .map(Bytes::from)
        });
        let decoded = if self.object.layout == Layout::Inline {
            let stored = self.object.data.as_deref().unwrap_or_default();
            let start = usize::try_from(stored_offset).unwrap_or(usize::MAX);
            let frame = stored
                .get(start..start.saturating_add(stored_len as usize))
                .ok_or_else(|| self.corrupt("inline object is shorter than its frame index"))?;
            let frame = Bytes::copy_from_slice(frame);
            tokio::task::spawn_blocking(move || decode(frame))
                .await
                .map_err(DomainError::internal)?
        } else {
            self.blobs
                .read_range_then(
                    &self.object.hash,
                    stored_offset,
                    u64::from(stored_len),
                    decode,
                )
                .await
                .map_err(|e| self.storage_failure(e))?
        };
        let data = decoded.map_err(|detail| {
            self.corrupt(format!(
                "frame at content offset {offset} failed verification: {detail}"
            ))
        })?;
        if let Some(cache) = &self.frame_cache {
            cache.insert(&self.object.hash, offset, data.clone());
        }
        self.remember(idx, data.clone());
        Ok(data)
    }

    /// Fetches frames from `idx` on with one ranged read of the store, as many
    /// as fit [`READ_AHEAD_BYTES`] of content and lie before the sequential
    /// end, and decodes and checks each. Fetches nothing when that is one frame.
    async fn fetch_ahead(&mut self, idx: usize) -> Result<(), DomainError> {
        let end = self.read_ahead_to.unwrap_or(u64::MAX);
        let frames = self.frames();
        let mut last = idx;
        let mut content = 0u64;
        for (i, f) in frames.iter().enumerate().skip(idx) {
            content += u64::from(f.content_len);
            if i > idx && (content > READ_AHEAD_BYTES || f.content_offset >= end) {
                break;
            }
            last = i;
        }
        if last == idx {
            return Ok(());
        }
        let batch: Vec<FrameEntry> = frames
            .get(idx..=last)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        let (Some(first), Some(final_frame)) = (batch.first(), batch.last()) else {
            return Ok(());
        };
        let start = first.stored_offset;
        let stop = final_frame
            .stored_offset
            .saturating_add(u64::from(final_frame.stored_len));
        let stored = self
            .blobs
            .read_range(&self.object.hash, start, stop.saturating_sub(start))
            .await
            .map_err(|e| self.storage_failure(e))?;
        let decoded = tokio::task::spawn_blocking(move || decode_run(&batch, idx, &stored, start))
            .await
            .map_err(DomainError::internal)?;
        self.ahead = decoded.into();
        Ok(())
    }

    /// A store failure of a frame read, as the domain reports it.
    fn storage_failure(&self, e: StorageError) -> DomainError {
        match e {
            StorageError::MissingObject(_) => self.corrupt("its object file is missing"),
            StorageError::Truncated(_) => self.corrupt("its object file is truncated"),
            other => DomainError::Storage(other),
        }
    }

    /// Keeps frame `idx` for this reader's next look (the last two frames).
    fn remember(&mut self, idx: usize, data: Bytes) {
        self.decoded.retain(|(i, _)| *i != idx);
        if self.decoded.len() == 2 {
            self.decoded.remove(0);
        }
        self.decoded.push((idx, data));
    }

    fn raw_content(&self) -> Result<Bytes, DomainError> {
        let data = self.object.data.as_deref().unwrap_or_default();
        if hex::encode(Sha256::digest(data)) != self.object.hash {
            return Err(self.corrupt("inline content does not match its SHA-256"));
        }
        Ok(Bytes::copy_from_slice(data))
    }

    /// Content bytes `[offset, offset + len)`, clipped to the content.
    pub async fn read(&mut self, offset: u64, len: u64) -> Result<Bytes, DomainError> {
        let end = offset.saturating_add(len).min(self.size());
        if offset >= end {
            return Ok(Bytes::new());
        }
        let first = self.frame_at_offset(offset);
        let last = self.frame_at_offset(end - 1);
        let mut out = Vec::new();
        for idx in first..=last {
            let frame_start = self.frames()[idx].content_offset;
            let from = offset.saturating_sub(frame_start) as usize;
            let to = (end - frame_start) as usize;
            let data = self.frame(idx, to).await?;
            let to = to.min(data.len());
            let piece = data
                .get(from..to)
                .ok_or_else(|| self.corrupt("frame shorter than indexed"))?;
            if first == last {
                return Ok(data.slice_ref(piece));
            }
            out.extend_from_slice(piece);
        }
        Ok(Bytes::from(out))
    }

    /// Offset of the first byte of line `line` (1-based; `line` ≤ lines).
    ///
    /// `lookahead` is how many bytes from there the caller reads next: they
    /// are decoded in the same pass, so the frame is not decoded twice.
    pub async fn line_start(&mut self, line: u64, lookahead: usize) -> Result<u64, DomainError> {
        if line <= 1 {
            return Ok(0);
        }
        let k = line - 1; // the line starts right after the k-th newline
        let idx = self.frame_with_newline(k);
        let entry = &self.frames()[idx];
        let (frame_start, nth) = (entry.content_offset, k - (entry.first_line - 1));
        // Decode only up to the page holding that newline.
        let mut seen = 0u64;
        let mut need = entry.content_len as usize;
        for (p, page) in entry.pages.iter().enumerate() {
            seen += u64::from(page.newlines);
            if seen >= nth {
                need = ((p + 1) * PAGE_BYTES).saturating_add(lookahead);
                break;
            }
        }
        let data = self.frame(idx, need).await?;
        memchr::memchr_iter(b'\n', &data)
            .nth(usize::try_from(nth).unwrap_or(usize::MAX).saturating_sub(1))
            .map(|pos| frame_start + pos as u64 + 1)
            .ok_or_else(|| {
                self.corrupt(format!("line {line} is not where the frame index puts it"))
            })
    }

    /// Line number of the line holding byte `offset`.
    pub async fn line_at(&mut self, offset: u64) -> Result<u64, DomainError> {
        if self.size() == 0 {
            return Ok(1);
        }
        let offset = offset.min(self.size() - 1);
        let idx = self.frame_at_offset(offset);
        let (frame_start, first_line) = (
            self.frames()[idx].content_offset,
            self.frames()[idx].first_line,
        );
        let within = (offset - frame_start) as usize;
        let data = self.frame(idx, within + 1).await?;
        let within = within.min(data.len());
        Ok(first_line + memchr::memchr_iter(b'\n', &data[..within]).count() as u64)
    }

    /// The content offset and length of frame `idx`.
    pub fn frame_entry(&self, idx: usize) -> Option<&FrameEntry> {
        self.frames().get(idx)
    }
}

/// Decodes and checks the frames of `run` (frame `first` on) from `stored`,
/// the store's bytes from `start`; stops after the first that fails.
fn decode_run(
    run: &[FrameEntry],
    first: usize,
    stored: &Bytes,
    start: u64,
) -> Vec<(usize, Result<Bytes, String>)> {
    let mut out = Vec::with_capacity(run.len());
    for (n, f) in run.iter().enumerate() {
        let frame = f
            .stored_offset
            .checked_sub(start)
            .and_then(|from| usize::try_from(from).ok())
            .and_then(|from| Some(from..from.checked_add(f.stored_len as usize)?))
            .and_then(|range| stored.get(range))
            .ok_or_else(|| "the object is shorter than its frame index".to_owned())
            .and_then(|frame| {
                seekable::decompress_prefix(frame, f.content_len as usize, usize::MAX, &f.pages)
            });
        let failed = frame.is_err();
        out.push((first + n, frame.map(Bytes::from)));
        if failed {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
