//! Line, byte and chunk slices with their guardrails.
//!
//! Lines are 1-based and inclusive and end at `\n` (a `\r` before it stays
//! part of the line). A slice never exceeds `max_bytes`: a line range that
//! would is cut at the last whole line (or, for one huge line, at the byte
//! cap) and says so with `truncated` and a `next` pointer that continues it.

use bytes::Bytes;

use crate::domain::DomainError;
use crate::domain::memories::ids::MemoryId;
use crate::domain::memories::read::ObjectReader;

/// Guardrails of a single read of a memory (a slice, a grep).
#[derive(Clone, Copy, Debug)]
pub struct SliceLimits {
    /// Most lines per line slice.
    pub max_lines: u64,
    /// Most bytes per slice.
    pub max_bytes: u64,
    /// Lines served when no end is given.
    pub default_lines: u64,
    /// Target size of a chunk.
    pub chunk_bytes: u64,
    /// Content bytes one grep reads before it answers with `next`.
    pub grep_scan_bytes: u64,
}

impl SliceLimits {
    /// How far a chunk boundary may move forward to land on a line start.
    pub fn chunk_snap(&self) -> u64 {
        (self.chunk_bytes / 4).min(8192)
    }

    /// Number of chunks of content of `size` bytes.
    pub fn chunk_count(&self, size: u64) -> u64 {
        size.div_ceil(self.chunk_bytes.max(1))
    }
}

/// A piece of a memory's content, with where it sits.
#[derive(Clone, Debug)]
pub struct Slice {
    /// The memory.
    pub id: MemoryId,
    /// First line (or line of the first byte).
    pub start: u64,
    /// Last whole line included (or line of the last byte).
    pub end: u64,
    /// Content offset of the first byte.
    pub offset: u64,
    /// The bytes.
    pub content: Bytes,
    /// Lines in the whole memory.
    pub total_lines: u64,
    /// Bytes in the whole memory.
    pub total_bytes: u64,
    /// The byte cap cut the requested range short.
    pub truncated: bool,
    /// Pointer to the range that follows, if any.
    pub next: Option<String>,
    /// For chunk slices: (index, count).
    pub chunk: Option<(u64, u64)>,
    /// For token-budgeted slices: what the content counts.
    pub tokens: Option<SliceTokens>,
}

/// The token count of a token-budgeted slice.
#[derive(Clone, Debug)]
pub struct SliceTokens {
    /// Tokens of the content.
    pub count: u64,
    /// How they were counted (`exact:o200k_base`, `estimate:...`).
    pub method: String,
    /// The content starts at a line start and ends at a line end (or at the
    /// end of the content), so a line range names it.
    pub whole_lines: bool,
}

/// Lines `start..=end` (end defaults to `start + default_lines - 1`).
pub async fn lines(
    reader: &mut ObjectReader,
    id: &MemoryId,
    start: Option<u64>,
    end: Option<u64>,
    limits: &SliceLimits,
) -> Result<Slice, DomainError> {
    let total = reader.lines();
    let start = start.unwrap_or(1);
    if start == 0 {
        return Err(DomainError::InvalidRange(
            "lines are numbered from 1: `start` must be at least 1".into(),
        ));
    }
    let end =
        end.unwrap_or_else(|| start.saturating_add(limits.default_lines.min(limits.max_lines) - 1));
    if end < start {
        return Err(DomainError::InvalidRange(format!(
            "`end` ({end}) is before `start` ({start})"
        )));
    }
    let requested = end - start + 1;
    if requested > limits.max_lines {
        return Err(DomainError::SliceTooLarge {
            limit: "max_slice_lines",
            max: limits.max_lines,
            requested,
            message: format!(
                "{requested} lines requested; a slice holds at most {} lines (max_slice_lines): ask for a smaller range",
                limits.max_lines
            ),
        });
    }
    if start > total.max(1) {
        return Err(DomainError::InvalidRange(format!(
            "line {start} is past the end: the memory has {total} lines"
        )));
    }
    let end = end.min(total.max(1));
    let offset = reader.line_start(start, limits.max_bytes as usize).await?;
    let window = reader.read(offset, limits.max_bytes).await?;
    let window_reaches_end = offset + window.len() as u64 >= reader.size();
    let wanted = (end - start + 1) as usize;
    let follow =
        |last: u64| (last < total).then(|| line_uri(id, last + 1, (last + requested).min(total)));
    let (content, last, truncated, next) = match memchr::memchr_iter(b'\n', &window).nth(wanted - 1)
    {
        Some(pos) => (window.slice(..=pos), end, false, follow(end)),
        None if window_reaches_end => (window, end, false, follow(end)),
        None => match memchr::memrchr(b'\n', &window) {
            Some(pos) => {
                let whole = memchr::memchr_iter(b'\n', &window[..=pos]).count() as u64;
                let last = start + whole - 1;
                (window.slice(..=pos), last, true, follow(last))
            }
            None => {
                // One line longer than the cap: serve its head, point at the rest.
                let cut = utf8_boundary(&window);
                let next = byte_uri(id, offset + cut as u64, limits.max_bytes);
                (window.slice(..cut), start, true, Some(next))
            }
        },
    };
    Ok(Slice {
        id: id.clone(),
        start,
        end: last,
        offset,
        content,
        total_lines: total,
        total_bytes: reader.size(),
        truncated,
        next,
        chunk: None,
        tokens: None,
    })
}

/// Bytes `[offset, offset + len)`; `len` defaults to the cap.
pub async fn bytes(
    reader: &mut ObjectReader,
    id: &MemoryId,
    offset: u64,
    len: Option<u64>,
    limits: &SliceLimits,
) -> Result<Slice, DomainError> {
    let size = reader.size();
    let len = len.unwrap_or(limits.max_bytes);
    if len > limits.max_bytes {
        return Err(DomainError::SliceTooLarge {
            limit: "max_slice_bytes",
            max: limits.max_bytes,
            requested: len,
            message: format!(
                "{len} bytes requested; a slice holds at most {} bytes (max_slice_bytes): ask for a smaller range",
                limits.max_bytes
            ),
        });
    }
    if offset > size {
        return Err(DomainError::InvalidRange(format!(
            "offset {offset} is past the end: the memory has {size} bytes"
        )));
    }
    let content = reader.read(offset, len).await?;
    let stop = offset + content.len() as u64;
    let next = (stop < size).then(|| byte_uri(id, stop, len.max(1)));
    span(reader, id, offset, content, next, None).await
}

/// Chunk `n` (0-based): about `chunk_bytes` of content, moved to line starts.
pub async fn chunk(
    reader: &mut ObjectReader,
    id: &MemoryId,
    n: u64,
    limits: &SliceLimits,
) -> Result<Slice, DomainError> {
    let count = limits.chunk_count(reader.size());
    if n >= count {
        return Err(DomainError::InvalidRange(format!(
            "chunk {n} does not exist: the memory has {count} chunks, numbered from 0"
        )));
    }
    let from = chunk_boundary(reader, n, limits).await?;
    let to = chunk_boundary(reader, n + 1, limits).await?;
    let content = reader.read(from, to - from).await?;
    let next = (to < reader.size()).then(|| byte_uri(id, to, limits.chunk_bytes));
    span(reader, id, from, content, next, Some((n, count))).await
}

/// Start of chunk `n`: `n * chunk_bytes`, moved forward to the next line start
/// if one is within reach.
async fn chunk_boundary(
    reader: &mut ObjectReader,
    n: u64,
    limits: &SliceLimits,
) -> Result<u64, DomainError> {
    let size = reader.size();
    let nominal = n.saturating_mul(limits.chunk_bytes);
    if n == 0 || nominal >= size {
        return Ok(nominal.min(size));
    }
    let look = reader.read(nominal - 1, limits.chunk_snap() + 1).await?;
    Ok(match memchr::memchr(b'\n', &look) {
        Some(pos) if nominal + (pos as u64) < size => nominal + pos as u64,
        _ => nominal,
    })
}

async fn span(
    reader: &mut ObjectReader,
    id: &MemoryId,
    offset: u64,
    content: Bytes,
    next: Option<String>,
    chunk: Option<(u64, u64)>,
) -> Result<Slice, DomainError> {
    let start = reader.line_at(offset).await?;
    let end = match content.len() {
        0 => start,
        n => start + memchr::memchr_iter(b'\n', &content[..n - 1]).count() as u64,
    };
    Ok(Slice {
        id: id.clone(),
        start,
        end,
        offset,
        content,
        total_lines: reader.lines(),
        total_bytes: reader.size(),
        truncated: false,
        next,
        chunk,
        tokens: None,
    })
}

/// Longest prefix that does not end inside a UTF-8 sequence (whole if not UTF-8-like).
pub fn utf8_boundary(data: &[u8]) -> usize {
    let len = data.len();
    // Walk back over at most 3 continuation bytes to the lead byte.
    let mut lead = len;
    while lead > 0 && len - lead < 4 && data[lead - 1] & 0xC0 == 0x80 {
        lead -= 1;
    }
    if lead == 0 || lead == len && data[len - 1] < 0x80 {
        return len;
    }
    let lead_byte = data[lead - 1];
    let needed = match lead_byte {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return len,
    };
    if len - (lead - 1) < needed && lead > 1 {
        lead - 1
    } else {
        len
    }
}

/// `mem://<id>#L<a>-<b>`.
pub fn line_uri(id: &MemoryId, start: u64, end: u64) -> String {
    format!("mem://{id}#L{start}-{end}")
}

/// `mem://<id>?offset=<n>&len=<n>`.
pub fn byte_uri(id: &MemoryId, offset: u64, len: u64) -> String {
    format!("mem://{id}?offset={offset}&len={len}")
}

#[cfg(test)]
mod tests {
    use super::utf8_boundary;

    #[test]
    fn cuts_before_a_split_character() {
        let text = "aé".as_bytes(); // 61 C3 A9
        assert_eq!(utf8_boundary(text), 3);
        assert_eq!(utf8_boundary(&text[..2]), 1);
        assert_eq!(utf8_boundary(b"abc"), 3);
        let euro = "€".as_bytes(); // E2 82 AC
        assert_eq!(utf8_boundary(&[b'x', euro[0], euro[1]]), 1);
        assert_eq!(utf8_boundary(&[0xFF, 0xFE]), 2);
    }
}
