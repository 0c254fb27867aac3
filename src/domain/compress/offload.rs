//! Storing the pieces a strategy takes out: concurrently, through
//! [`Memories::put_together`] (their metadata committed together: one
//! fsync for a request's pieces), and remembered per namespace by SHA-256
//! so the same piece compressed again costs no put at all.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::domain::DomainError;
use crate::domain::memories::Memories;
use crate::domain::memories::ids::IdRef;
use crate::domain::memories::together::{self, Pass};
use crate::model::PutFields;

/// Puts in flight at once (and committed together).
const CONCURRENT_PUTS: usize = 16;
/// How long a remembered piece is trusted without a put (a client may delete memories).
const REMEMBER_FOR: Duration = Duration::from_secs(600);
/// Bytes the remembered pieces may take ([`remembered_bytes`]): ~8,000
/// pieces with summaries of the default 800 characters.
const REMEMBERED_BYTES: u64 = 8 << 20;

/// A piece to store.
#[derive(Clone, Debug)]
pub struct Job {
    /// The exact text.
    pub content: String,
    /// Its SHA-256: the key of the offload cache. (The memory id is the hash
    /// of what is stored, which differs when redaction replaced a secret.)
    pub hash: [u8; 32],
    /// TOOL_OUTPUT, CONTEXT or TRANSCRIPT.
    pub kind: &'static str,
    /// Tool name or role.
    pub subtype: Option<String>,
    /// Media type.
    pub mime: &'static str,
    /// Short title.
    pub title: String,
}

impl Job {
    /// A job for `content`; the media type is guessed from its first bytes.
    pub fn new(
        content: String,
        kind: &'static str,
        subtype: Option<String>,
        title: String,
    ) -> Self {
        let hash = Sha256::digest(content.as_bytes()).into();
        let mime = if kind == "TRANSCRIPT" {
            "application/x-ndjson"
        } else {
            guess_mime(&content)
        };
        Self {
            content,
            hash,
            kind,
            subtype: subtype.map(|s| super::marker::clip(&s, 128).to_owned()),
            mime,
            title,
        }
    }
}

fn guess_mime(content: &str) -> &'static str {
    let head = content.trim_start();
    let tail = content.trim_end();
    let lower: String = head
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    if (head.starts_with('{') && tail.ends_with('}'))
        || (head.starts_with('[') && tail.ends_with(']'))
    {
        "application/json"
    } else if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        "text/html"
    } else {
        "text/plain"
    }
}

/// A stored piece, as markers and `memory_refs` describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRef {
    /// Memory id (SHA-256 of the content).
    pub id: String,
    /// Memory type.
    pub kind: String,
    /// Subtype.
    pub subtype: Option<String>,
    /// Media type.
    pub mime: String,
    /// Title.
    pub title: Option<String>,
    /// Content bytes.
    pub bytes: u64,
    /// Content lines.
    pub lines: u64,
    /// Tokens of the content as the store counts them.
    pub tokens: u64,
    /// The stored summary.
    pub summary: String,
}

/// Stores pieces for compress, remembering what each namespace already holds.
pub struct Offloader {
    memories: Arc<Memories>,
    known: moka::sync::Cache<(String, [u8; 32]), Arc<StoredRef>>,
}

impl Offloader {
    /// An offloader over the memory service.
    pub fn new(memories: Arc<Memories>) -> Self {
        let known = moka::sync::Cache::builder()
            .weigher(|key: &(String, [u8; 32]), stored: &Arc<StoredRef>| {
                u32::try_from(remembered_bytes(&key.0, stored)).unwrap_or(u32::MAX)
            })
            .max_capacity(REMEMBERED_BYTES)
            .time_to_live(REMEMBER_FOR)
            .build();
        Self { memories, known }
    }

    /// Stores every job and answers their references in job order: at most
    /// [`CONCURRENT_PUTS`] at a time, each such group committed together. A
    /// dry run stores nothing: unknown pieces get the id and summary they
    /// would get.
    pub async fn store(
        &self,
        namespace: &str,
        jobs: Vec<Job>,
        thread: Option<&str>,
        dry_run: bool,
    ) -> Result<Vec<Arc<StoredRef>>, DomainError> {
        let mut stored = Vec::with_capacity(jobs.len());
        let mut jobs = jobs.into_iter().peekable();
        while jobs.peek().is_some() {
            let group: Vec<Job> = jobs.by_ref().take(CONCURRENT_PUTS).collect();
            let passes = together::passes(group.len());
            // Every put of the group runs at once (its pass waits for the others).
            let group = group
                .into_iter()
                .zip(passes)
                .map(|(job, pass)| self.store_one(namespace, job, thread, dry_run, pass));
            stored.extend(futures::future::try_join_all(group).await?);
        }
        Ok(stored)
    }

    /// One job of [`Offloader::store`]; `pass` is dropped unless it puts.
    async fn store_one(
        &self,
        namespace: &str,
        job: Job,
        thread: Option<&str>,
        dry_run: bool,
        pass: Pass,
    ) -> Result<Arc<StoredRef>, DomainError> {
        let key = (namespace.to_owned(), job.hash);
        let known = self.known.get(&key);
        self.memories.metrics().cache("offload", known.is_some());
        if let Some(known) = known {
            // A client may have deleted it since: never point at nothing.
            if self.still_there(namespace, &known.id).await? {
                return Ok(known);
            }
            self.known.invalidate(&key);
        }
        if dry_run {
            return Ok(Arc::new(self.predicted(job)));
        }
        let stored = Arc::new(self.put(namespace, job, thread, pass).await?);
        self.known.insert(key, stored.clone());
        Ok(stored)
    }

    /// What a put of `job` would answer, derived as put derives it.
    fn predicted(&self, job: Job) -> StoredRef {
        let predicted = self.memories.predict(&job.content, job.mime);
        StoredRef {
            id: predicted.id,
            kind: job.kind.to_owned(),
            subtype: job.subtype,
            mime: job.mime.to_owned(),
            title: Some(job.title),
            bytes: predicted.bytes,
            lines: predicted.lines,
            tokens: predicted.tokens,
            summary: predicted.summary,
        }
    }

    /// Whether the namespace still holds memory `id`.
    async fn still_there(&self, namespace: &str, id: &str) -> Result<bool, DomainError> {
        let Ok(id) = IdRef::parse(id) else {
            return Ok(false);
        };
        match self.memories.get(namespace, &id).await {
            Ok(_) => Ok(true),
            Err(DomainError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn put(
        &self,
        namespace: &str,
        job: Job,
        thread: Option<&str>,
        pass: Pass,
    ) -> Result<StoredRef, DomainError> {
        let fields = PutFields {
            kind: Some(job.kind.to_owned()),
            subtype: job.subtype,
            mime: Some(job.mime.to_owned()),
            title: Some(job.title),
            thread: thread.map(str::to_owned),
            ..PutFields::default()
        };
        let body = futures::stream::iter([Ok::<_, Infallible>(Bytes::from(job.content))]);
        let record = self
            .memories
            .put_together(namespace, fields, body, pass)
            .await?
            .record;
        Ok(StoredRef {
            id: record.id,
            kind: record.fields.kind,
            subtype: record.fields.subtype,
            mime: record.fields.mime,
            title: record.fields.title,
            bytes: record.bytes,
            lines: record.lines,
            tokens: record.tokens,
            summary: record.summary,
        })
    }
}

/// About what a remembered piece of `namespace` holds: its strings and
/// the fixed part of its entry.
fn remembered_bytes(namespace: &str, stored: &StoredRef) -> usize {
    const FIXED: usize = 160;
    FIXED
        + namespace.len()
        + stored.id.len()
        + stored.kind.len()
        + stored.subtype.as_ref().map_or(0, String::len)
        + stored.mime.len()
        + stored.title.as_ref().map_or(0, String::len)
        + stored.summary.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_guessed_from_the_text() {
        assert_eq!(guess_mime(" {\"a\": 1}\n"), "application/json");
        assert_eq!(guess_mime("<!DOCTYPE html><html></html>"), "text/html");
        assert_eq!(guess_mime("test result: ok"), "text/plain");
        let job = Job::new("x".into(), "TRANSCRIPT", None, "t".into());
        assert_eq!(job.mime, "application/x-ndjson");
        assert_eq!(
            hex::encode(job.hash),
            crate::domain::memories::ids::MemoryId::of_content(b"x").as_str()
        );
    }

    #[test]
    fn remembered_pieces_are_weighed_by_their_summaries() {
        let piece = |summary: usize| StoredRef {
            id: "a".repeat(64),
            kind: "TOOL_OUTPUT".into(),
            subtype: Some("Bash".into()),
            mime: "text/plain".into(),
            title: Some("cargo test".into()),
            bytes: 50_000,
            lines: 900,
            tokens: 12_000,
            summary: "s".repeat(summary),
        };
        let small = remembered_bytes("default", &piece(0));
        let full = remembered_bytes("default", &piece(800));
        assert_eq!(full - small, 800);
        // The bound holds minutes of a busy proxy's pieces, not hours of them.
        let held = REMEMBERED_BYTES / full as u64;
        assert!((5_000..=10_000).contains(&held), "{held}");
    }
}
