//! Just enough tar for streaming: ustar headers out, and entries read one by
//! one from an async byte stream (never the whole archive in memory).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};

use super::super::DomainError;

/// Size of a tar block.
pub const BLOCK: usize = 512;

/// The header block of a regular file entry.
pub fn header(path: &str, size: u64, mtime_secs: u64) -> Result<Bytes, DomainError> {
    let mut h = tar::Header::new_ustar();
    h.set_path(path)
        .map_err(|e| DomainError::Storage(crate::storage::StorageError::Io(e)))?;
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(mtime_secs);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    Ok(Bytes::copy_from_slice(h.as_bytes()))
}

/// Zeros that pad an entry of `size` bytes to a whole block.
pub fn padding(size: u64) -> Bytes {
    let rem = (size % BLOCK as u64) as usize;
    Bytes::from(vec![0u8; (BLOCK - rem) % BLOCK])
}

/// The two zero blocks that end an archive.
pub fn trailer() -> Bytes {
    Bytes::from(vec![0u8; 2 * BLOCK])
}

/// The boxed body an archive is read from.
pub type Body = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// One entry's header, as far as import cares.
#[derive(Debug)]
pub struct EntryHead {
    /// Path inside the archive.
    pub path: String,
    /// Data bytes that follow the header.
    pub size: u64,
    /// True for regular files; other kinds (directories, pax headers) are skipped.
    pub regular: bool,
}

/// Reads tar entries from a byte stream.
pub struct TarReader {
    body: Body,
    buf: Bytes,
}

impl TarReader {
    /// A reader over `body`.
    pub fn new(body: Body) -> Self {
        Self {
            body,
            buf: Bytes::new(),
        }
    }

    /// The next `n` bytes, or fewer at the end of the stream.
    async fn take(&mut self, n: usize) -> Result<Bytes, DomainError> {
        let mut out = BytesMut::new();
        while out.len() < n {
            if self.buf.is_empty() {
                match self.body.next().await {
                    Some(chunk) => self.buf = chunk.map_err(DomainError::Body)?,
                    None => break,
                }
                continue;
            }
            let k = (n - out.len()).min(self.buf.len());
            out.extend_from_slice(&self.buf.split_to(k));
        }
        Ok(out.freeze())
    }

    /// The next entry's header; `None` at the end-of-archive marker (or a
    /// stream that ends between entries).
    pub async fn next_entry(&mut self) -> Result<Option<EntryHead>, DomainError> {
        let block = self.take(BLOCK).await?;
        if block.is_empty() || block.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let bad = |message: String| DomainError::InvalidArchive {
            item: "archive".into(),
            message,
        };
        if block.len() < BLOCK {
            return Err(bad("the archive ends inside an entry header".into()));
        }
        let h = tar::Header::from_byte_slice(&block);
        let stored = h
            .cksum()
            .map_err(|e| bad(format!("unreadable header checksum: {e}")))?;
        let computed: u32 = block
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(b)
                }
            })
            .sum();
        if stored != computed {
            return Err(bad("an entry header fails its checksum".into()));
        }
        let path = h
            .path()
            .map_err(|e| bad(format!("unreadable entry path: {e}")))?
            .to_string_lossy()
            .into_owned();
        let size = h
            .entry_size()
            .map_err(|e| bad(format!("{path}: unreadable size: {e}")))?;
        let kind = h.entry_type();
        Ok(Some(EntryHead {
            path,
            size,
            regular: kind.is_file(),
        }))
    }

    /// The data of the current entry of `size` bytes, as a stream; the
    /// padding after it is consumed by [`TarReader::end_entry`].
    pub fn data(&mut self, size: u64) -> EntryData<'_> {
        EntryData {
            reader: self,
            remaining: size,
        }
    }

    /// Reads the whole data of a small entry (at most `max` bytes).
    pub async fn small(&mut self, item: &str, size: u64, max: u64) -> Result<Bytes, DomainError> {
        if size > max {
            return Err(DomainError::InvalidArchive {
                item: item.into(),
                message: format!("entry of {size} bytes is larger than the {max} allowed"),
            });
        }
        let data = self.take(size as usize).await?;
        if (data.len() as u64) < size {
            return Err(truncated(item));
        }
        self.end_entry(size).await?;
        Ok(data)
    }

    /// Skips the data of an entry and its padding.
    pub async fn skip(&mut self, item: &str, size: u64) -> Result<(), DomainError> {
        let mut data = self.data(size);
        while let Some(chunk) = data.next().await {
            chunk.map_err(|_| truncated(item))?;
        }
        self.end_entry(size).await
    }

    /// Consumes the padding after an entry's `size` data bytes.
    pub async fn end_entry(&mut self, size: u64) -> Result<(), DomainError> {
        let pad = padding(size).len();
        let got = self.take(pad).await?;
        if got.len() < pad {
            return Err(truncated("archive"));
        }
        Ok(())
    }
}

fn truncated(item: &str) -> DomainError {
    DomainError::InvalidArchive {
        item: item.into(),
        message: "the archive ends inside this entry".into(),
    }
}

/// The data of one entry, streamed from the archive.
pub struct EntryData<'a> {
    reader: &'a mut TarReader,
    remaining: u64,
}

impl Stream for EntryData<'_> {
    type Item = Result<Bytes, String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.remaining == 0 {
                return Poll::Ready(None);
            }
            if !this.reader.buf.is_empty() {
                let k = usize::try_from(this.remaining)
                    .unwrap_or(usize::MAX)
                    .min(this.reader.buf.len());
                this.remaining -= k as u64;
                return Poll::Ready(Some(Ok(this.reader.buf.split_to(k))));
            }
            match this.reader.body.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.reader.buf = chunk,
                Poll::Ready(Some(Err(e))) => {
                    this.remaining = 0;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.remaining = 0;
                    return Poll::Ready(Some(Err("the archive ends inside an entry".into())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(parts: Vec<Bytes>) -> TarReader {
        TarReader::new(Box::pin(futures::stream::iter(
            parts.into_iter().map(Ok::<_, String>),
        )))
    }

    #[tokio::test]
    async fn entries_written_here_read_back_across_odd_chunk_boundaries() {
        let mut archive = Vec::new();
        for (path, data) in [("a.txt", &b"hello"[..]), ("objects/b", &[7u8; 1300][..])] {
            archive.extend_from_slice(&header(path, data.len() as u64, 0).unwrap());
            archive.extend_from_slice(data);
            archive.extend_from_slice(&padding(data.len() as u64));
        }
        archive.extend_from_slice(&trailer());
        let chunks = archive.chunks(333).map(Bytes::copy_from_slice).collect();
        let mut r = reader(chunks);
        let a = r.next_entry().await.unwrap().unwrap();
        assert_eq!((a.path.as_str(), a.size, a.regular), ("a.txt", 5, true));
        assert_eq!(&r.small("a.txt", a.size, 100).await.unwrap()[..], b"hello");
        let b = r.next_entry().await.unwrap().unwrap();
        assert_eq!(b.path, "objects/b");
        let mut got = Vec::new();
        let mut data = r.data(b.size);
        while let Some(c) = data.next().await {
            got.extend_from_slice(&c.unwrap());
        }
        r.end_entry(b.size).await.unwrap();
        assert_eq!(got, vec![7u8; 1300]);
        assert!(r.next_entry().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_flipped_header_byte_fails_the_checksum() {
        let mut block = header("manifest.json", 10, 0).unwrap().to_vec();
        block[3] ^= 1;
        let err = reader(vec![Bytes::from(block)])
            .next_entry()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[tokio::test]
    async fn an_archive_cut_inside_an_entry_is_reported() {
        let mut archive = header("x", 1000, 0).unwrap().to_vec();
        archive.extend_from_slice(&[1u8; 10]);
        let mut r = reader(vec![Bytes::from(archive)]);
        let head = r.next_entry().await.unwrap().unwrap();
        assert!(r.skip("x", head.size).await.is_err());
    }
}
