//! Full-text search on SQLite: frames ranked by the embedded tantivy index
//! ([`FullText`]), then kept when they belong to the caller's memories (so
//! nothing of another namespace can match), and the pending queue the
//! index's commits empty.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rusqlite::Connection;
use sqlx::{Row, Sqlite, SqlitePool};

use super::super::expression::{self, Expr};
use super::super::fulltext::{FrameHit, FullText};
use super::super::sql::{Dialect, Statement, push_filters, push_visible, rows::memory_from_row};
use super::super::{ListQuery, SearchRow};
use crate::clock::now_ms;
use crate::storage::StorageError;

/// Takes objects whose frames a commit made durable off the pending queue,
/// inside the writer's transaction.
pub(super) fn dequeue(conn: &Connection, hashes: &[String]) -> Result<(), StorageError> {
    let mut delete = conn.prepare_cached("DELETE FROM search_pending WHERE hash = ?1")?;
    for hash in hashes {
        delete.execute([hash])?;
    }
    Ok(())
}

/// Runs blocking index work off the async workers.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(StorageError::internal)?
}

/// Frames the first pass ranks, at least: the best of all matching frames.
const FIRST_PASS_FRAMES: usize = 200;
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
/// memories' fields are read for the answer's rows only.
pub(super) async fn search(
    pool: &SqlitePool,
    index: &Arc<FullText>,
    expression: &str,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    let expr = expression::parse(expression).map_err(StorageError::Database)?;
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
        let allowed = allowed_in_turn(pool, &distinct_hashes(&best), filter, limit).await?;
        let mut chosen = group(&best, |hash| allowed.contains(hash), limit);
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
                let allowed = allowed_in_turn(pool, &distinct_hashes(&tied), filter, limit).await?;
                chosen = group(&tied, |hash| allowed.contains(hash), limit);
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
                complete_frames(index, &expr, &mut chosen).await?;
            }
            tracing::debug!(pass, exhaustive, elapsed = ?started.elapsed(), "search ranked");
            return records(pool, chosen, filter).await;
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

/// Which of the ranked `objects` are memories of the caller passing the
/// filters, looked up best first in growing chunks until `limit` are found:
/// usually the first few are the caller's, and each row costs a look-up.
/// A chunk never ends inside a tie, so every object left unchecked ranks
/// strictly below the `limit` found.
async fn allowed_in_turn(
    pool: &SqlitePool,
    objects: &[(&str, f32)],
    filter: &ListQuery,
    limit: usize,
) -> Result<HashSet<String>, StorageError> {
    let mut found = HashSet::new();
    let (mut checked, mut chunk) = (0, limit.saturating_mul(FIRST_LOOKUP_PER_RESULT).max(16));
    while checked < objects.len() && found.len() < limit {
        let mut end = checked.saturating_add(chunk).min(objects.len());
        while end < objects.len() && objects[end].1 == objects[end - 1].1 {
            end += 1;
        }
        let hashes: Vec<&str> = objects[checked..end].iter().map(|(h, _)| *h).collect();
        found.extend(allowed(pool, &hashes, filter).await?);
        checked = end;
        chunk = chunk.saturating_mul(4);
    }
    Ok(found)
}

/// Which of `hashes` are memories of the caller passing the filters.
async fn allowed(
    pool: &SqlitePool,
    hashes: &[&str],
    filter: &ListQuery,
) -> Result<HashSet<String>, StorageError> {
    let ids = serde_json::to_string(hashes)
        .map_err(|e| StorageError::Database(format!("cannot list candidate ids: {e}")))?;
    let mut sql = Statement::new("SELECT m.id FROM memories m WHERE m.namespace = ");
    sql.push_bind(filter.namespace.clone())
        .push(" AND m.id IN (SELECT value FROM json_each(")
        .push_bind(ids)
        .push("))");
    push_filters(&mut sql, filter);
    push_visible(&mut sql, now_ms());
    let rows = sql.query::<Sqlite>().fetch_all(pool).await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
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

/// The answer rows: the ranked memories' fields, in rank order (one that
/// went in between is left out).
async fn records(
    pool: &SqlitePool,
    ranked: Vec<Ranked>,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let hashes: Vec<&str> = ranked.iter().map(|r| r.hash.as_str()).collect();
    let ids = serde_json::to_string(&hashes)
        .map_err(|e| StorageError::Database(format!("cannot list result ids: {e}")))?;
    let sql = format!(
        "{} WHERE m.namespace = ? AND m.id IN (SELECT value FROM json_each(?))",
        Sqlite::MEMORY_SELECT
    );
    let rows = sqlx::query(&sql)
        .bind(&filter.namespace)
        .bind(ids)
        .fetch_all(pool)
        .await?;
    let mut found = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        let record = memory_from_row::<Sqlite>(row)?;
        found.insert(record.id.clone(), record);
    }
    Ok(ranked
        .into_iter()
        .filter_map(|r| {
            found.remove(&r.hash).map(|record| SearchRow {
                record,
                score: r.score,
                frames: r.frames,
            })
        })
        .collect())
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
