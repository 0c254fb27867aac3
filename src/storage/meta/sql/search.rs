//! Full-text search on either backend: frames ranked by the replica's
//! tantivy index ([`FullText`]), then kept when they belong to the caller's
//! memories (so nothing of another namespace can match), their fields read
//! from the database for the answer's rows only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};

use super::super::expression::Expr;
use super::super::fulltext::{FrameHit, FullText};
use super::super::{ListQuery, MemoryRecord, SearchRow};
use super::rows::memory_from_row;
use super::{Dialect, Reads, Statement, push_filters, push_visible};
use crate::clock::now_ms;
use crate::storage::StorageError;

/// Runs blocking index work off the async workers.
pub(in crate::storage::meta) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(StorageError::internal)?
}

/// Frames the first pass ranks, at least: the best of all matching frames.
pub(in crate::storage::meta) const FIRST_PASS_FRAMES: usize = 200;
/// …and at least this many per result asked.
const FIRST_PASS_PER_RESULT: usize = 20;
/// How much larger each further pass is.
const PASS_GROWTH: usize = 8;

/// A memory chosen by the ranking, before its fields are read.
struct Ranked {
    hash: String,
    /// Its best frame's score, negated (lower is better).
    score: f64,
    /// Its matching frames, best first (those among the pass's frames;
    /// [`complete_frames`] adds the others).
    frames: Vec<u32>,
}

/// Memories whose frames match `expression` (an FTS5 expression), best BM25 first.
///
/// A pass asks the index for the best frames of all objects (block-max
/// WAND stops early, so a word in most frames costs little more than a
/// rare one) and keeps the caller's memories among them. When that yields
/// `limit` memories and the last is strictly better than the pass's worst
/// frame, they are the best (no memory outside the pass can beat a frame
/// inside it). When the last ties with that frame (BM25 with quantized
/// lengths ties often), every frame scoring as much or more is taken, so
/// ties are broken by hash as a full ranking would. When the pass yields
/// fewer (most belong to other namespaces or fail the filters), a pass
/// [`PASS_GROWTH`] times larger follows, until one holds every match. The
/// memories' fields come with the look-up that finds them the caller's.
pub(in crate::storage::meta) async fn search(
    rows: &dyn Lookup,
    index: &Arc<FullText>,
    expr: &Expr,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    let limit = filter.limit.max(1) as usize;
    let mut pass = FIRST_PASS_FRAMES.max(limit.saturating_mul(FIRST_PASS_PER_RESULT));
    let started = std::time::Instant::now();
    loop {
        let (best, exhaustive) = {
            let (index, expr) = (index.clone(), expr.clone());
            blocking(move || index.top(&expr, pass)).await?
        };
        let Some(worst) = best.last().map(|hit| hit.score) else {
            if exhaustive {
                return Ok(Vec::new());
            }
            pass = pass.saturating_mul(PASS_GROWTH);
            continue;
        };
        let mut allowed = allowed_in_turn(rows, &distinct_hashes(&best), filter, limit).await?;
        let mut chosen = group(&best, |hash| allowed.contains_key(hash), limit);
        let full = chosen.len() == limit;
        // Full, and its last memory strictly better than the pass's worst frame.
        let mut proven = full && chosen.last().is_some_and(|r| r.score < -f64::from(worst));
        if full && !proven && !exhaustive {
            // The cut fell inside a tie: every frame scoring as the last one
            // or better holds the answer (with its ties broken by hash).
            let mut max = pass;
            loop {
                let (tied, all) = {
                    let (index, expr) = (index.clone(), expr.clone());
                    blocking(move || index.at_least(&expr, worst, max)).await?
                };
                allowed = allowed_in_turn(rows, &distinct_hashes(&tied), filter, limit).await?;
                chosen = group(&tied, |hash| allowed.contains_key(hash), limit);
                // The pass held `limit` of the caller's memories at `worst`
                // or better, so the whole tie does too.
                if chosen.len() == limit || all {
                    break;
                }
                max = max.saturating_mul(PASS_GROWTH);
            }
            proven = chosen.len() == limit;
        }
        if exhaustive || proven {
            if !exhaustive {
                complete_frames(index, expr, &mut chosen).await?;
            }
            tracing::debug!(pass, exhaustive, elapsed = ?started.elapsed(), "search ranked");
            return Ok(answer(chosen, allowed));
        }
        pass = pass.saturating_mul(PASS_GROWTH);
    }
}

/// The objects of `frames` (best first) in rank order, with their best score.
fn distinct_hashes(frames: &[FrameHit]) -> Vec<(&str, f32)> {
    let mut seen = HashSet::new();
    frames
        .iter()
        .filter(|hit| seen.insert(hit.hash.as_str()))
        .map(|hit| (hit.hash.as_str(), hit.score))
        .collect()
}

/// Hashes the first look-up checks, per result asked (at least 16).
const FIRST_LOOKUP_PER_RESULT: usize = 2;

/// The ranked `objects` that are memories of the caller passing the
/// filters, with their fields, looked up best first in growing chunks until
/// `limit` are found: usually the first few are the caller's, and each row
/// costs a look-up. A chunk never ends inside a tie, so every object left
/// unchecked ranks strictly below the `limit` found.
async fn allowed_in_turn(
    rows: &dyn Lookup,
    objects: &[(&str, f32)],
    filter: &ListQuery,
    limit: usize,
) -> Result<HashMap<String, MemoryRecord>, StorageError> {
    let mut found = HashMap::new();
    let (mut checked, mut chunk) = (0, limit.saturating_mul(FIRST_LOOKUP_PER_RESULT).max(16));
    while checked < objects.len() && found.len() < limit {
        let mut end = checked.saturating_add(chunk).min(objects.len());
        while end < objects.len() && objects[end].1 == objects[end - 1].1 {
            end += 1;
        }
        let hashes: Vec<&str> = objects[checked..end].iter().map(|(h, _)| *h).collect();
        found.extend(rows.memories(&hashes, filter).await?);
        checked = end;
        chunk = chunk.saturating_mul(4);
    }
    Ok(found)
}

/// Frames grouped by memory, best memory first (by its best frame, then
/// hash), only the memories `keep` accepts, at most `limit`.
fn group(frames: &[FrameHit], keep: impl Fn(&str) -> bool, limit: usize) -> Vec<Ranked> {
    let mut out: Vec<Ranked> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for hit in frames {
        if !keep(&hit.hash) {
            continue;
        }
        match at.get(hit.hash.as_str()) {
            Some(&i) => out[i].frames.push(hit.idx),
            None => {
                at.insert(&hit.hash, out.len());
                out.push(Ranked {
                    hash: hit.hash.clone(),
                    score: -f64::from(hit.score),
                    frames: vec![hit.idx],
                });
            }
        }
    }
    // The index breaks ties by document; the answer breaks them by hash.
    out.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then_with(|| a.hash.cmp(&b.hash))
    });
    out.truncate(limit);
    out
}

/// Adds to each memory its matching frames outside the pass (after those
/// inside it, in frame order): only objects of several frames have any.
async fn complete_frames(
    index: &Arc<FullText>,
    expr: &Expr,
    ranked: &mut [Ranked],
) -> Result<(), StorageError> {
    for memory in ranked {
        let more = {
            let (index, expr, hash) = (index.clone(), expr.clone(), memory.hash.clone());
            let known = memory.frames.len();
            blocking(move || index.frames_of(&expr, &hash, known)).await?
        };
        for idx in more.into_iter().flatten() {
            if !memory.frames.contains(&idx) {
                memory.frames.push(idx);
            }
        }
    }
    Ok(())
}

/// The answer rows: the ranked memories with their fields, in rank order.
fn answer(ranked: Vec<Ranked>, mut fields: HashMap<String, MemoryRecord>) -> Vec<SearchRow> {
    ranked
        .into_iter()
        .filter_map(|r| {
            fields.remove(&r.hash).map(|record| SearchRow {
                record,
                score: r.score,
                frames: r.frames,
            })
        })
        .collect()
}

/// What a search reads from the database: which ranked objects are the
/// caller's memories, with their fields.
#[async_trait]
pub(in crate::storage::meta) trait Lookup: Send + Sync {
    /// The memories of the caller among `hashes` that pass the filters, by id.
    async fn memories(
        &self,
        hashes: &[&str],
        filter: &ListQuery,
    ) -> Result<HashMap<String, MemoryRecord>, StorageError>;
}

#[async_trait]
impl<DB> Lookup for Reads<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> bool: Decode<'r, DB> + Type<DB>,
    for<'r> f64: Decode<'r, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn memories(
        &self,
        hashes: &[&str],
        filter: &ListQuery,
    ) -> Result<HashMap<String, MemoryRecord>, StorageError> {
        let ids = serde_json::to_string(hashes)
            .map_err(|e| StorageError::Database(format!("cannot list candidate ids: {e}")))?;
        let mut sql = Statement::new(DB::MEMORY_SELECT);
        sql.push(" WHERE m.namespace = ")
            .push_bind(filter.namespace.clone())
            .push(" AND m.id IN ");
        push_json_values::<DB>(&mut sql, ids);
        push_filters(&mut sql, filter);
        push_visible(&mut sql, now_ms());
        let rows = sql.query::<DB>().fetch_all(self.pool()).await?;
        let mut found = HashMap::with_capacity(rows.len());
        for row in &rows {
            let record = memory_from_row::<DB>(row)?;
            found.insert(record.id.clone(), record);
        }
        Ok(found)
    }
}

/// Appends `(SELECT value FROM …)`: the strings of `json`, a JSON array.
fn push_json_values<DB: Dialect>(sql: &mut Statement, json: String) {
    let (before, after) = DB::JSON_VALUES;
    sql.push("(SELECT value FROM ")
        .push(before)
        .push_bind(json)
        .push(after)
        .push(")");
}
