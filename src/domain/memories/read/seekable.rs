//! The zstd seekable layout: independent checksummed frames plus a seek table.
//!
//! An object is a run of zstd frames (each 512 KiB of content by default, with zstd's own
//! content checksum) followed by the seek table of the zstd "seekable format"
//! in a skippable frame, so a plain `zstd -d` still decodes the whole object.

use std::cell::RefCell;
use std::sync::Mutex;

use zstd::stream::raw::Operation;

use crate::storage::meta::{PAGE_BYTES, PageEntry};

/// Magic number of the skippable frame that holds the seek table.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
/// Magic number that closes the seek table footer.
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;

thread_local! {
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    /// Room for the worst case of a frame's compression, kept per thread:
    /// the frame gets an exact copy (text needs a quarter of the room), and
    /// no frame-sized buffer is allocated and freed for each frame.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Compressors kept for reuse, with their level. Shared rather than one per
/// thread: a level-3 context for 512 KiB frames holds ~1.5 MiB, and an
/// upload spreads its frames over however many threads the blocking pool
/// has started, so per-thread contexts multiplied the memory held.
static COMPRESSORS: Mutex<Vec<(i32, zstd::bulk::Compressor<'static>)>> = Mutex::new(Vec::new());
/// Most compressors kept (more may exist while more frames are compressed at once).
const KEPT_COMPRESSORS: usize = 3;

/// Compresses one frame with the content size and checksum recorded in it.
pub fn compress_frame(content: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let kept = COMPRESSORS.lock().ok().and_then(|mut kept| {
        let at = kept.iter().position(|(l, _)| *l == level)?;
        Some(kept.swap_remove(at))
    });
    let (level, mut compressor) = match kept {
        Some(kept) => kept,
        None => {
            let mut compressor = zstd::bulk::Compressor::new(level)?;
            compressor.include_checksum(true)?;
            compressor.include_contentsize(true)?;
            (level, compressor)
        }
    };
    let compressed = SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(content.len()));
        compressor.compress_to_buffer(content, &mut *scratch)?;
        Ok::<_, std::io::Error>(scratch.to_vec())
    })?;
    if let Ok(mut kept) = COMPRESSORS.lock()
        && kept.len() < KEPT_COMPRESSORS
    {
        kept.push((level, compressor));
    }
    Ok(compressed)
}

/// Decompresses one frame and checks its checksum and its expected length.
///
/// The error says which check failed; the caller adds the memory id.
pub fn decompress_frame(frame: &[u8], expected_len: usize) -> Result<Vec<u8>, String> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        let decompressor = slot
            .as_mut()
            .ok_or_else(|| "zstd decompressor unavailable".to_owned())?;
        // One spare byte so that a frame longer than recorded is detected, not clipped.
        let content = decompressor
            .decompress(frame, expected_len + 1)
            .map_err(|e| format!("frame failed to decode ({e})"))?;
        if content.len() != expected_len {
            return Err(format!(
                "frame decoded to {} bytes, expected {expected_len}",
                content.len()
            ));
        }
        Ok(content)
    })
}

/// Decodes only the first `target` bytes of a frame (a whole number of
/// pages) and checks each of those pages against its CRC-32: the front of a
/// frame, verified, without paying for the rest. A `target` reaching the end
/// decodes the whole frame with [`decompress_frame`] (zstd's checksum).
pub fn decompress_prefix(
    frame: &[u8],
    content_len: usize,
    target: usize,
    pages: &[PageEntry],
) -> Result<Vec<u8>, String> {
    let page_count = target.div_ceil(PAGE_BYTES);
    let target = page_count.saturating_mul(PAGE_BYTES);
    if target >= content_len || page_count > pages.len() {
        return decompress_frame(frame, content_len);
    }
    let mut out = vec![0u8; target];
    let mut decoder = zstd::stream::raw::Decoder::new().map_err(|e| e.to_string())?;
    let mut input = zstd::stream::raw::InBuffer::around(frame);
    let mut output = zstd::stream::raw::OutBuffer::around(&mut out[..]);
    while output.pos() < target {
        let before = (input.pos(), output.pos());
        decoder
            .run(&mut input, &mut output)
            .map_err(|e| format!("frame failed to decode ({e})"))?;
        if (input.pos(), output.pos()) == before {
            return Err(format!(
                "frame ended after {} of {target} bytes",
                output.pos()
            ));
        }
    }
    for (i, (page, entry)) in out.chunks(PAGE_BYTES).zip(pages).enumerate() {
        if crc32fast::hash(page) != entry.crc32 {
            return Err(format!("page {i} of the frame fails its CRC-32"));
        }
    }
    Ok(out)
}

/// The seek table for frames given as (compressed size, content size).
pub fn seek_table(frames: &[(u32, u32)]) -> Vec<u8> {
    let entries_len = frames.len() * 8;
    let frame_len = u32::try_from(entries_len + 9).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(entries_len + 17);
    out.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
    out.extend_from_slice(&frame_len.to_le_bytes());
    for (compressed, content) in frames {
        out.extend_from_slice(&compressed.to_le_bytes());
        out.extend_from_slice(&content.to_le_bytes());
    }
    let count = u32::try_from(frames.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    out.push(0); // descriptor: no per-entry checksums (each frame carries its own)
    out.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_zstd_decodes_a_seekable_object() {
        let parts: [&[u8]; 3] = [b"first frame\n", b"second\r\nframe", b""];
        let mut object = Vec::new();
        let mut table = Vec::new();
        for part in parts {
            let frame = compress_frame(part, 3).unwrap();
            table.push((frame.len() as u32, part.len() as u32));
            object.extend_from_slice(&frame);
        }
        object.extend_from_slice(&seek_table(&table));
        assert_eq!(zstd::decode_all(&object[..]).unwrap(), parts.concat());
        assert_eq!(&object[object.len() - 4..], &SEEKABLE_MAGIC.to_le_bytes());
    }

    #[test]
    fn a_prefix_decodes_exactly_and_is_verified() {
        let content: Vec<u8> = (0..300_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let pages = PageEntry::of(&content);
        let frame = compress_frame(&content, 3).unwrap();
        let prefix = decompress_prefix(&frame, content.len(), 70_000, &pages).unwrap();
        assert_eq!(prefix.len(), 2 * PAGE_BYTES);
        assert_eq!(prefix, content[..2 * PAGE_BYTES]);
        let whole = decompress_prefix(&frame, content.len(), content.len(), &pages).unwrap();
        assert_eq!(whole, content);
        let mut wrong = pages.clone();
        wrong[1].crc32 ^= 1;
        assert!(decompress_prefix(&frame, content.len(), 70_000, &wrong).is_err());
        assert!(
            decompress_prefix(&frame[..frame.len() / 10], content.len(), 70_000, &pages).is_err()
        );
    }

    #[test]
    fn a_flipped_byte_is_caught() {
        let content = b"some content that is long enough to matter\n".repeat(100);
        let mut frame = compress_frame(&content, 3).unwrap();
        assert_eq!(decompress_frame(&frame, content.len()).unwrap(), content);
        for i in 0..frame.len() {
            frame[i] ^= 0x40;
            assert!(
                decompress_frame(&frame, content.len()).is_err(),
                "flip at {i} went unnoticed"
            );
            frame[i] ^= 0x40;
        }
    }
}
