//! Integrity check of the whole store: every object's frames (decoded, with
//! zstd and page checksums) and whole-content SHA-256 against its id, and
//! metadata against stored objects both ways. Objects are read frame by
//! frame, never whole.

use std::collections::BTreeMap;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::domain::DomainError;
use crate::domain::memories::read::seekable;
use crate::storage::StorageError;
use crate::storage::blob::{BlobStore, RangeTransform};
use crate::storage::meta::{FrameEntry, Layout, MetaStore, ObjectRecord, PageEntry};

/// An object that failed a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptObject {
    /// Content hash (the id of its memories).
    pub id: String,
    /// Which check failed.
    pub detail: String,
}

/// What verify found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Object rows checked.
    pub checked_objects: u64,
    /// Objects that passed every check.
    pub ok: u64,
    /// Blob objects whose file is gone.
    pub missing: Vec<String>,
    /// Objects that failed a check.
    pub corrupt: Vec<CorruptObject>,
    /// Files in the blob store that no object row names.
    pub orphaned_files: Vec<String>,
    /// Memories (namespace, id) whose object row is gone.
    pub orphaned_rows: Vec<(String, String)>,
    /// With repair: objects moved to quarantine.
    pub quarantined: u64,
    /// With repair: memories marked corrupt.
    pub marked_memories: u64,
}

/// Checks every object; with `repair`, quarantines corrupt objects and marks
/// the memories of corrupt and missing objects.
pub async fn verify(
    meta: &dyn MetaStore,
    blobs: &dyn BlobStore,
    repair: bool,
) -> Result<VerifyReport, DomainError> {
    let mut files: BTreeMap<String, u64> = blobs
        .list()
        .await?
        .into_iter()
        .map(|f| (f.hash, f.bytes))
        .collect();
    let mut report = VerifyReport::default();
    let mut after: Option<String> = None;
    loop {
        let page = meta.objects_after(after.as_deref(), 500).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.hash.clone());
        for summary in page {
            report.checked_objects += 1;
            let file_len = files.remove(&summary.hash);
            let Some(object) = meta.stored_object(&summary.hash).await? else {
                report.ok += 1; // removed by GC meanwhile: nothing left to check
                continue;
            };
            let outcome = match (object.layout, file_len) {
                (Layout::Blob, None) => Err(Problem::Missing),
                (Layout::Blob, Some(len)) if len != object.stored_bytes => {
                    Err(Problem::Corrupt(format!(
                        "object file is {len} bytes, its index says {}",
                        object.stored_bytes
                    )))
                }
                _ => check_object(&object, blobs).await?,
            };
            match outcome {
                Ok(()) => report.ok += 1,
                Err(Problem::Missing) => {
                    if repair {
                        report.marked_memories += meta
                            .mark_corrupt(&object.hash, "its object file is missing")
                            .await?;
                    }
                    report.missing.push(object.hash);
                }
                Err(Problem::Corrupt(detail)) => {
                    if repair {
                        if object.layout == Layout::Blob {
                            blobs.quarantine(&object.hash).await?;
                            report.quarantined += 1;
                        }
                        report.marked_memories += meta.mark_corrupt(&object.hash, &detail).await?;
                    }
                    report.corrupt.push(CorruptObject {
                        id: object.hash,
                        detail,
                    });
                }
            }
        }
    }
    // Files left over name no row (puts in flight or crash leftovers).
    let rows = crate::domain::maintenance::gc::blob_rows(meta).await?;
    report.orphaned_files = files.into_keys().filter(|h| !rows.contains(h)).collect();
    report.orphaned_rows = meta.memories_without_object().await?;
    Ok(report)
}

enum Problem {
    Missing,
    Corrupt(String),
}

/// Decodes and checks every frame and the whole content's hash.
async fn check_object(
    object: &ObjectRecord,
    blobs: &dyn BlobStore,
) -> Result<Result<(), Problem>, DomainError> {
    let mut hasher = Sha256::new();
    if object.layout == Layout::Raw {
        hasher.update(object.data.as_deref().unwrap_or_default());
        return Ok(compare(hasher, object));
    }
    let mut expected_offset = 0;
    for (idx, frame) in object.frames.iter().enumerate() {
        if frame.content_offset != expected_offset {
            return Ok(Err(Problem::Corrupt(format!(
                "frame {idx} starts at content offset {}, expected {expected_offset}",
                frame.content_offset
            ))));
        }
        expected_offset += u64::from(frame.content_len);
        let content = match object.layout {
            Layout::Inline => {
                let stored = object.data.as_deref().unwrap_or_default();
                let start = usize::try_from(frame.stored_offset).unwrap_or(usize::MAX);
                let Some(bytes) =
                    stored.get(start..start.saturating_add(frame.stored_len as usize))
                else {
                    return Ok(Err(Problem::Corrupt(format!(
                        "frame {idx} lies outside the inline object"
                    ))));
                };
                decode(Bytes::copy_from_slice(bytes), frame.clone())
            }
            _ => {
                let entry = frame.clone();
                let transform: RangeTransform =
                    std::sync::Arc::new(move |bytes| decode(bytes, entry.clone()));
                match blobs
                    .read_range_then(
                        &object.hash,
                        frame.stored_offset,
                        u64::from(frame.stored_len),
                        transform,
                    )
                    .await
                {
                    Ok(decoded) => decoded,
                    Err(StorageError::MissingObject(_)) => return Ok(Err(Problem::Missing)),
                    Err(StorageError::Truncated(_)) => {
                        return Ok(Err(Problem::Corrupt("object file is truncated".into())));
                    }
                    Err(other) => return Err(other.into()),
                }
            }
        };
        match content {
            Ok(content) => hasher.update(&content),
            Err(detail) => {
                return Ok(Err(Problem::Corrupt(format!("frame {idx}: {detail}"))));
            }
        }
    }
    if expected_offset != object.bytes {
        return Ok(Err(Problem::Corrupt(format!(
            "frames hold {expected_offset} bytes, the object {}",
            object.bytes
        ))));
    }
    Ok(compare(hasher, object))
}

/// Decodes a frame (zstd checksum and length) and checks its page CRCs.
fn decode(stored: Bytes, entry: FrameEntry) -> Result<Bytes, String> {
    let content = seekable::decompress_frame(&stored, entry.content_len as usize)?;
    if !entry.pages.is_empty() && PageEntry::of(&content) != entry.pages {
        return Err("page checksums do not match the frame index".into());
    }
    Ok(Bytes::from(content))
}

fn compare(hasher: Sha256, object: &ObjectRecord) -> Result<(), Problem> {
    let digest = hex::encode(hasher.finalize());
    if digest == object.hash {
        Ok(())
    } else {
        Err(Problem::Corrupt(format!(
            "content hashes to {digest}, not to its id"
        )))
    }
}
