//! Import: an archive streamed in, each object checked against its name
//! and stored, then its memory restored with the original metadata.

use std::collections::HashMap;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};

use super::tar_io::TarReader;
use super::{
    ArchivedMemory, FORMAT, ImportReport, MANIFEST_MAX, Manifest, Portable, VERSION, invalid,
    read_jsonl,
};
use crate::domain::DomainError;
use crate::domain::memories::ingest;
use crate::model::PutFields;
use crate::storage::meta::ImportedMemory;

impl Portable {
    /// Restores an archive into `namespace`; see the module documentation.
    #[tracing::instrument(skip_all)]
    pub async fn import<S, E>(&self, namespace: &str, body: S) -> Result<ImportReport, DomainError>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let mut tar = TarReader::new(Box::pin(body.map(|r| r.map_err(|e| e.to_string()))));
        let mut report = ImportReport::default();
        let mut manifest: Option<Manifest> = None;
        let mut pending: Option<HashMap<String, ArchivedMemory>> = None;
        while let Some(head) = tar.next_entry().await? {
            let path = head.path.clone();
            if !head.regular {
                tar.skip(&path, head.size).await?;
                continue;
            }
            match path.as_str() {
                "manifest.json" => {
                    let data = tar.small(&path, head.size, MANIFEST_MAX).await?;
                    let m: Manifest = serde_json::from_slice(&data)
                        .map_err(|e| invalid(&path, format!("not a manifest: {e}")))?;
                    if m.format != FORMAT || m.version != VERSION {
                        return Err(invalid(
                            &path,
                            format!(
                                "format `{}` version {} is not `{FORMAT}` version {VERSION}",
                                m.format, m.version
                            ),
                        ));
                    }
                    manifest = Some(m);
                }
                "memories.jsonl" => {
                    if manifest.is_none() {
                        return Err(invalid(&path, "comes before manifest.json"));
                    }
                    let memories = read_jsonl(&mut tar, head.size).await?;
                    report.memories = memories.len() as u64;
                    pending = Some(memories);
                }
                _ => {
                    let Some(hash) = path.strip_prefix("objects/") else {
                        return Err(invalid(&path, "unexpected entry"));
                    };
                    let memories = pending
                        .as_mut()
                        .ok_or_else(|| invalid(&path, "comes before memories.jsonl"))?;
                    let memory = memories
                        .remove(hash)
                        .ok_or_else(|| invalid(&path, "no memory in memories.jsonl names it"))?;
                    report.bytes += head.size;
                    if self
                        .restore(namespace, &mut tar, &path, head.size, memory)
                        .await?
                    {
                        report.imported += 1;
                    } else {
                        report.skipped += 1;
                    }
                    tar.end_entry(head.size).await?;
                }
            }
        }
        if manifest.is_none() {
            return Err(invalid("manifest.json", "missing from the archive"));
        }
        let pending =
            pending.ok_or_else(|| invalid("memories.jsonl", "missing from the archive"))?;
        if let Some(id) = pending.keys().min() {
            return Err(invalid(
                format!("objects/{id}"),
                format!(
                    "missing from the archive ({} memories without their object)",
                    pending.len()
                ),
            ));
        }
        Ok(report)
    }

    /// Restores one memory from its object entry; false when the namespace has it already.
    async fn restore(
        &self,
        namespace: &str,
        tar: &mut TarReader,
        path: &str,
        size: u64,
        memory: ArchivedMemory,
    ) -> Result<bool, DomainError> {
        if size != memory.bytes {
            return Err(invalid(
                path,
                format!("{size} bytes, but memories.jsonl says {}", memory.bytes),
            ));
        }
        let fields = PutFields {
            kind: Some(memory.kind.clone()),
            subtype: memory.subtype.clone(),
            mime: Some(memory.mime.clone()),
            title: memory.title.clone(),
            tags: memory.tags.clone(),
            thread: memory.thread.clone(),
            checkpoint: memory.checkpoint.clone(),
            directory: memory.directory.clone(),
            pinned: Some(memory.pinned),
            ..PutFields::default()
        }
        .validate()
        .map_err(|e| invalid(path, format!("bad metadata: {e}")))?;
        let mismatch = |actual: &str| {
            invalid(
                path,
                format!("content hashes to {actual}, not to the name of the entry"),
            )
        };
        if self.meta.get(namespace, &memory.id).await?.is_some() {
            // Already here: still verify what the archive says.
            let mut hasher = Sha256::new();
            let mut data = tar.data(size);
            while let Some(chunk) = data.next().await {
                hasher.update(chunk.map_err(|e| invalid(path, e))?);
            }
            let actual = hex::encode(hasher.finalize());
            return if actual == memory.id {
                Ok(false)
            } else {
                Err(mismatch(&actual))
            };
        }
        let ingested = ingest::ingest(
            tar.data(size),
            false,
            self.blobs.as_ref(),
            self.meta.as_ref(),
            &self.locks,
            &self.ingest,
            None,
        )
        .await
        .map_err(|e| match e {
            DomainError::Body(message) => invalid(path, message),
            other => other,
        })?;
        if ingested.id.as_str() != memory.id {
            return Err(mismatch(ingested.id.as_str()));
        }
        if ingested.object.lines != memory.lines {
            return Err(invalid(
                path,
                format!(
                    "{} lines, but memories.jsonl says {}",
                    ingested.object.lines, memory.lines
                ),
            ));
        }
        Ok(self
            .meta
            .import_memory(ImportedMemory {
                namespace: namespace.to_owned(),
                fields,
                tokens: memory.tokens,
                token_method: memory.token_method,
                summary: memory.summary,
                created_at: memory.created_at,
                updated_at: memory.updated_at,
                last_accessed_at: memory.last_accessed_at,
                access_count: memory.access_count,
                expires_at: memory.expires_at,
                object: ingested.object,
            })
            .await?)
    }
}
