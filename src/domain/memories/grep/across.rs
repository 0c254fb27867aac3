//! Grep across the memories of a namespace that a filter selects, newest
//! first, with one budget of matches and of bytes scanned for the request,
//! and a cursor that continues inside the memory where it stopped.

use crate::domain::DomainError;
use crate::domain::memories::Memories;
use crate::domain::memories::grep::words::required_words;
use crate::domain::memories::grep::{self, GrepQuery, GrepResult};
use crate::domain::memories::ids::{IdRef, MemoryId};
use crate::storage::meta::{ListQuery, MemoryRecord};

/// Where a grep across memories goes on: in memory `id` (created at
/// `created_at`) after line `after`, then in the memories older than it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcrossCursor {
    /// Creation time of the memory to continue in (Unix ms).
    pub created_at: i64,
    /// The memory to continue in.
    pub id: MemoryId,
    /// The line to continue after in it.
    pub after: u64,
}

impl AcrossCursor {
    /// The cursor as a client passes it back: `<created_at>.<id>.<after>`.
    pub fn encode(&self) -> String {
        format!("{}.{}.{}", self.created_at, self.id, self.after)
    }

    /// A cursor this server issued, or None.
    pub fn decode(text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let created_at = parts.next()?.parse().ok()?;
        let id = match IdRef::parse(parts.next()?).ok()? {
            IdRef::Full(id) => id,
            IdRef::Prefix(_) => return None,
        };
        let after = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Self {
            created_at,
            id,
            after,
        })
    }
}

/// The matches of one memory.
#[derive(Clone, Debug)]
pub struct MemoryMatches {
    /// The memory.
    pub record: MemoryRecord,
    /// Its matching lines.
    pub result: GrepResult,
}

/// The answer of a grep across memories.
#[derive(Clone, Debug, Default)]
pub struct AcrossResult {
    /// Memories with at least one match, newest first.
    pub memories: Vec<MemoryMatches>,
    /// Memories searched (wholly or in part).
    pub searched: u32,
    /// Content bytes read.
    pub scanned_bytes: u64,
    /// Content bytes not read: the full-text index showed no line there
    /// can match.
    pub skipped_bytes: u64,
    /// Where to continue (inside a memory, or at the first one past the
    /// requested number); None when every memory the filters select was searched.
    pub next: Option<AcrossCursor>,
}

/// Greps the memories `list` selects (newest first, at most `list.limit`),
/// from `cursor` on, for `query`: at most `query.max_matches` matches and
/// about `max_scan_bytes` read in all.
pub async fn grep_across(
    memories: &Memories,
    mut list: ListQuery,
    query: &GrepQuery,
    cursor: Option<AcrossCursor>,
    max_scan_bytes: u64,
) -> Result<AcrossResult, DomainError> {
    grep::validate(query)?;
    grep::compile(query)?;
    let words = required_words(
        &query.what.pattern,
        query.what.fixed,
        query.what.ignore_case,
    );
    let mut answer = AcrossResult::default();
    let mut start_after = 0;
    let mut records = Vec::new();
    if let Some(cursor) = cursor {
        let record = memories
            .get(&list.namespace, &IdRef::Full(cursor.id.clone()))
            .await?;
        start_after = cursor.after;
        list.after = Some((cursor.created_at, cursor.id.to_string()));
        list.limit = list.limit.saturating_sub(1);
        records.push(record);
    }
    // One more than asked: the first memory beyond them is where a next
    // answer would start (even when the cursor's memory takes the only slot).
    let slots = list.limit as usize;
    list.limit += 1;
    let mut more = memories.list(list).await?;
    let beyond = (more.len() > slots).then(|| more.swap_remove(slots));
    more.truncate(slots);
    records.extend(more);
    let mut left = query.max_matches;
    for (n, record) in records.iter().enumerate() {
        let after = if n == 0 { start_after } else { 0 };
        let budget = max_scan_bytes.saturating_sub(answer.scanned_bytes);
        if left == 0 || budget == 0 {
            answer.next = Some(cursor_at(record, after));
            break;
        }
        let (_, reader) = memories
            .open(
                &record.namespace,
                &IdRef::Full(MemoryId::from_stored(record.id.clone())),
            )
            .await?;
        let q = GrepQuery {
            max_matches: left,
            after,
            ..query.clone()
        };
        let result = memories.grep_reader(reader, &q, &words, budget).await?;
        answer.searched += 1;
        answer.scanned_bytes += result.scanned_bytes;
        answer.skipped_bytes += result.skipped_bytes;
        left -= result.matches.len() as u32;
        let stopped = result.next;
        if !result.matches.is_empty() {
            answer.memories.push(MemoryMatches {
                record: record.clone(),
                result,
            });
        }
        if let Some(line) = stopped {
            answer.next = Some(cursor_at(record, line));
            break;
        }
    }
    if answer.next.is_none() {
        answer.next = beyond.map(|record| cursor_at(&record, 0));
    }
    Ok(answer)
}

fn cursor_at(record: &MemoryRecord, after: u64) -> AcrossCursor {
    AcrossCursor {
        created_at: record.created_at,
        id: MemoryId::from_stored(record.id.clone()),
        after,
    }
}
