//! Export of a namespace as one tar archive, and import of such an archive.
//!
//! The archive holds `manifest.json` (format, version, namespace, counts),
//! `memories.jsonl` (one line of metadata per memory) and `objects/<sha256>`
//! (each content as it is, decompressed). Export streams with bounded memory:
//! the metadata is spooled to a temp file, contents stream frame by frame.
//! Import streams each object through ingest (no redaction: the archived
//! bytes were redacted at their original put), checks its SHA-256 against its
//! name, and only then writes its memory, with the original metadata, in one
//! transaction. Memories the namespace already has are skipped (idempotent).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::{DomainError, now_ms};
use crate::domain::memories::ingest::IngestConfig;
use crate::domain::memories::locks::ObjectLocks;
use crate::domain::memories::read::ObjectReader;
use crate::domain::memories::read::content;
use crate::storage::StorageError;
use crate::storage::blob::BlobStore;
use crate::storage::meta::{ListQuery, MemoryRecord, MetaStore};

mod import;
mod tar_io;

use tar_io::TarReader;

/// The `format` field of a manifest.
pub const FORMAT: &str = "cairn-export";
/// The archive layout version this build writes and reads.
pub const VERSION: u32 = 1;
/// Largest `manifest.json` accepted.
const MANIFEST_MAX: u64 = 64 << 10;
/// Largest line of `memories.jsonl` accepted.
const LINE_MAX: usize = 1 << 20;

/// `manifest.json`: what the archive holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Archive layout version.
    pub version: u32,
    /// Namespace it was exported from.
    pub namespace: String,
    /// Memories in `memories.jsonl` (and objects under `objects/`).
    pub memories: u64,
    /// Content bytes of all objects.
    pub bytes: u64,
    /// Export time, Unix milliseconds.
    pub exported_at: i64,
}

/// One line of `memories.jsonl`: a memory with all its metadata.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ArchivedMemory {
    /// Content SHA-256, hex (also the object's name).
    pub id: String,
    /// Memory type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Subtype.
    pub subtype: Option<String>,
    /// Media type.
    pub mime: String,
    /// Title.
    pub title: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Thread link.
    pub thread: Option<String>,
    /// Checkpoint link.
    pub checkpoint: Option<String>,
    /// Directory link.
    pub directory: Option<String>,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Last put of the same content, Unix ms.
    pub updated_at: i64,
    /// Last read, Unix ms.
    pub last_accessed_at: Option<i64>,
    /// Number of reads.
    pub access_count: i64,
    /// Token count.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: String,
    /// Summary.
    pub summary: String,
    /// Content bytes.
    pub bytes: u64,
    /// Content lines.
    pub lines: u64,
    /// Never pruned nor expired (absent in archives of older versions: false).
    #[serde(default)]
    pub pinned: bool,
    /// When it expires, Unix ms (absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl From<&MemoryRecord> for ArchivedMemory {
    fn from(r: &MemoryRecord) -> Self {
        let f = &r.fields;
        Self {
            id: r.id.clone(),
            kind: f.kind.clone(),
            subtype: f.subtype.clone(),
            mime: f.mime.clone(),
            title: f.title.clone(),
            tags: f.tags.clone(),
            thread: f.thread.clone(),
            checkpoint: f.checkpoint.clone(),
            directory: f.directory.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            last_accessed_at: r.last_accessed_at,
            access_count: r.access_count,
            tokens: r.tokens,
            token_method: r.token_method.clone(),
            summary: r.summary.clone(),
            bytes: r.bytes,
            lines: r.lines,
            pinned: f.pinned,
            expires_at: r.expires_at,
        }
    }
}

/// What an import did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Memories in the archive.
    pub memories: u64,
    /// Memories written.
    pub imported: u64,
    /// Memories the namespace had already (left as they were).
    pub skipped: u64,
    /// Content bytes read from the archive.
    pub bytes: u64,
}

/// Export and import over the storage traits.
pub struct Portable {
    meta: Arc<dyn MetaStore>,
    blobs: Arc<dyn BlobStore>,
    ingest: IngestConfig,
    /// Shared with puts and GC, so that GC never removes an object under an import.
    locks: Arc<ObjectLocks>,
}

fn io(e: std::io::Error) -> DomainError {
    DomainError::Storage(StorageError::Io(e))
}

fn invalid(item: impl Into<String>, message: impl Into<String>) -> DomainError {
    DomainError::InvalidArchive {
        item: item.into(),
        message: message.into(),
    }
}

fn is_hash(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Portable {
    /// Export/import over the given stores, ingesting like puts do.
    pub fn new(
        meta: Arc<dyn MetaStore>,
        blobs: Arc<dyn BlobStore>,
        ingest: IngestConfig,
        locks: Arc<ObjectLocks>,
    ) -> Self {
        Self {
            meta,
            blobs,
            ingest,
            locks,
        }
    }

    /// The namespace as a tar stream. The metadata is read (and spooled)
    /// before this returns, so a failing store is an error status, not a
    /// broken body; contents are read and verified as the stream is polled.
    #[tracing::instrument(skip_all)]
    pub async fn export(
        &self,
        namespace: &str,
    ) -> Result<impl Stream<Item = Result<Bytes, DomainError>> + Send + 'static, DomainError> {
        let mut spool = tokio::fs::File::from_std(tempfile::tempfile().map_err(io)?);
        let (mut count, mut bytes, mut after) = (0u64, 0u64, None);
        loop {
            let page = self
                .meta
                .list(&ListQuery {
                    namespace: namespace.to_owned(),
                    after: after.take(),
                    limit: 500,
                    ..ListQuery::default()
                })
                .await?;
            let mut lines = Vec::new();
            for record in &page {
                serde_json::to_writer(&mut lines, &ArchivedMemory::from(record))
                    .map_err(|e| io(e.into()))?;
                lines.push(b'\n');
                count += 1;
                bytes += record.bytes;
            }
            spool.write_all(&lines).await.map_err(io)?;
            match page.last() {
                Some(last) if page.len() == 500 => after = Some((last.created_at, last.id.clone())),
                _ => break,
            }
        }
        spool.flush().await.map_err(io)?;
        let jsonl_len = spool.stream_position().await.map_err(io)?;
        let exported_at = now_ms();
        let manifest = serde_json::to_vec_pretty(&Manifest {
            format: FORMAT.into(),
            version: VERSION,
            namespace: namespace.to_owned(),
            memories: count,
            bytes,
            exported_at,
        })
        .map_err(|e| io(e.into()))?;
        let mtime = u64::try_from(exported_at / 1000).unwrap_or(0);
        let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, DomainError>>(4);
        let (meta, blobs) = (self.meta.clone(), self.blobs.clone());
        tokio::spawn(async move {
            let result = async {
                let m = manifest.len() as u64;
                for piece in [
                    tar_io::header("manifest.json", m, mtime)?,
                    Bytes::from(manifest),
                    tar_io::padding(m),
                    tar_io::header("memories.jsonl", jsonl_len, mtime)?,
                ] {
                    send(&mut tx, piece).await?;
                }
                spool.rewind().await.map_err(io)?;
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    let n = spool.read(&mut buf).await.map_err(io)?;
                    if n == 0 {
                        break;
                    }
                    send(&mut tx, Bytes::copy_from_slice(&buf[..n])).await?;
                }
                send(&mut tx, tar_io::padding(jsonl_len)).await?;
                spool.rewind().await.map_err(io)?;
                let mut lines = tokio::io::BufReader::new(spool).lines();
                while let Some(line) = lines.next_line().await.map_err(io)? {
                    let memory: ArchivedMemory =
                        serde_json::from_str(&line).map_err(|e| io(e.into()))?;
                    let object =
                        meta.object(&memory.id)
                            .await?
                            .ok_or_else(|| DomainError::Corrupt {
                                id: memory.id.clone(),
                                detail: "its object record is missing".into(),
                            })?;
                    let size = object.bytes;
                    let reader = ObjectReader::new(object, blobs.clone());
                    let path = format!("objects/{}", memory.id);
                    send(&mut tx, tar_io::header(&path, size, mtime)?).await?;
                    let mut body = std::pin::pin!(
                        content::stream(reader, memory.id.clone(), 0, size, true).await?
                    );
                    while let Some(piece) = body.next().await {
                        send(&mut tx, piece?).await?;
                    }
                    send(&mut tx, tar_io::padding(size)).await?;
                }
                send(&mut tx, tar_io::trailer()).await
            }
            .await;
            if let Err(e) = result {
                tracing::error!(error = %e, "export aborted");
                let _ = tx.send(Err(e)).await;
            }
        });
        Ok(rx)
    }
}

async fn send(
    tx: &mut futures::channel::mpsc::Sender<Result<Bytes, DomainError>>,
    piece: Bytes,
) -> Result<(), DomainError> {
    tx.send(Ok(piece))
        .await
        .map_err(|_| io(std::io::Error::other("the client went away")))
}

/// Reads `memories.jsonl` into a map by id, naming the first bad line.
async fn read_jsonl(
    tar: &mut TarReader,
    size: u64,
) -> Result<HashMap<String, ArchivedMemory>, DomainError> {
    let item = "memories.jsonl";
    let mut memories = HashMap::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut parse = |line: &[u8], number: u64| -> Result<(), DomainError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let at = format!("{item} line {number}");
        let memory: ArchivedMemory =
            serde_json::from_slice(line).map_err(|e| invalid(&at, format!("bad JSON: {e}")))?;
        if !is_hash(&memory.id) {
            return Err(invalid(&at, format!("`{}` is not a SHA-256 id", memory.id)));
        }
        if memories.insert(memory.id.clone(), memory).is_some() {
            return Err(invalid(&at, "the id appears twice"));
        }
        Ok(())
    };
    {
        let mut data = tar.data(size);
        while let Some(chunk) = data.next().await {
            let chunk = chunk.map_err(|e| invalid(item, e))?;
            let mut rest = &chunk[..];
            while let Some(pos) = memchr::memchr(b'\n', rest) {
                line.extend_from_slice(&rest[..pos]);
                number += 1;
                parse(&line, number)?;
                line.clear();
                rest = &rest[pos + 1..];
            }
            line.extend_from_slice(rest);
            if line.len() > LINE_MAX {
                return Err(invalid(
                    format!("{item} line {}", number + 1),
                    "line too long",
                ));
            }
        }
    }
    parse(&line, number + 1)?;
    tar.end_entry(size).await?;
    Ok(memories)
}
