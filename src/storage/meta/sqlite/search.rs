//! Full-text search on SQLite: FTS5 rows per frame (written by the writer
//! thread) and the ranked query joined through the caller's memories (so
//! nothing of another namespace can match).

use rusqlite::Connection;
use sqlx::{Row, Sqlite, SqlitePool};

use super::super::sql::{Dialect, Statement, push_filters, push_visible, rows::memory_from_row};
use super::super::{FrameBatch, ListQuery, SearchRow};
use crate::clock::now_ms;
use crate::storage::StorageError;

/// Adds a batch of frames to the index, inside the writer's transaction.
pub(super) fn index(conn: &Connection, batch: &FrameBatch) -> Result<(), StorageError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM objects WHERE hash = ?1")?
        .exists([&batch.hash])?;
    if exists {
        let mut frame = conn.prepare_cached(
            "INSERT INTO search_frames (hash, idx) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )?;
        let mut fts =
            conn.prepare_cached("INSERT INTO search_fts (rowid, body) VALUES (?1, ?2)")?;
        for f in &batch.frames {
            // A frame indexed before a restart is not indexed twice.
            if frame.execute((&batch.hash, i64::from(f.idx)))? == 1 {
                fts.execute((conn.last_insert_rowid(), &f.text))?;
            }
        }
    }
    if batch.done || !exists {
        conn.prepare_cached("DELETE FROM search_pending WHERE hash = ?1")?
            .execute([&batch.hash])?;
    }
    Ok(())
}

/// Frames the first pass ranks, at least: the best of all matching frames.
const FIRST_PASS_FRAMES: u32 = 200;
/// …and at least this many per result asked.
const FIRST_PASS_PER_RESULT: u32 = 20;

/// A memory chosen by the ranking, before its fields are read.
struct Ranked {
    hash: String,
    score: f64,
    /// Its matching frames, best first (in the first pass: those among the
    /// best frames; [`complete_frames`] adds the others).
    frames: Vec<u32>,
}

/// Memories whose frames match `expression` (an FTS5 expression), best BM25 first.
///
/// BM25 costs about a microsecond per matching frame, so the work is kept
/// to what the answer needs: a first pass asks FTS5 for the best
/// [`FIRST_PASS_FRAMES`] frames of the whole index and keeps the caller's
/// memories among them. When that yields `limit` memories, they are the
/// best (no memory outside the pass can beat a frame inside it); when it
/// does not (most belong to other namespaces or fail the filters) or the
/// cut fell inside a tie, every match is ranked as one query does. The
/// memories' fields are read for the answer's rows only.
pub(super) async fn search(
    pool: &SqlitePool,
    expression: &str,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    let limit = filter.limit.max(1);
    let pass = FIRST_PASS_FRAMES.max(limit.saturating_mul(FIRST_PASS_PER_RESULT));
    let best = best_frames(pool, expression, pass).await?;
    let Some(worst) = best.last().map(|(_, _, score)| *score) else {
        return Ok(Vec::new());
    };
    let allowed = allowed(pool, &distinct_hashes(&best), filter).await?;
    let mut chosen = group(&best, |hash| allowed.contains(hash), limit);
    let exhaustive = best.len() < pass as usize;
    // Full, and its last memory strictly better than the pass's worst frame.
    let proven = chosen.len() == limit as usize && chosen.last().is_some_and(|r| r.score < worst);
    let ranked = if exhaustive {
        chosen
    } else if proven {
        complete_frames(pool, expression, &mut chosen).await?;
        chosen
    } else {
        rank_all(pool, expression, filter).await?
    };
    records(pool, ranked, filter).await
}

/// The best `count` matching frames of the whole index: hash, frame, score.
async fn best_frames(
    pool: &SqlitePool,
    expression: &str,
    count: u32,
) -> Result<Vec<(String, u32, f64)>, StorageError> {
    let rows = sqlx::query(
        "SELECT f.hash, f.idx, h.score FROM \
         (SELECT rowid, rank AS score FROM search_fts WHERE search_fts MATCH ?1 \
          ORDER BY rank LIMIT ?2) h \
         CROSS JOIN search_frames f ON f.rowid = h.rowid ORDER BY h.score, f.hash, f.idx",
    )
    .bind(expression)
    .bind(i64::from(count))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, to_u32(r.try_get(1)?), r.try_get(2)?)))
        .collect()
}

fn distinct_hashes(frames: &[(String, u32, f64)]) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    frames
        .iter()
        .map(|(hash, _, _)| hash.as_str())
        .filter(|hash| seen.insert(*hash))
        .collect()
}

/// Which of `hashes` are memories of the caller passing the filters.
async fn allowed(
    pool: &SqlitePool,
    hashes: &[&str],
    filter: &ListQuery,
) -> Result<std::collections::HashSet<String>, StorageError> {
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
/// id), only the memories `keep` accepts, at most `limit`.
fn group(frames: &[(String, u32, f64)], keep: impl Fn(&str) -> bool, limit: u32) -> Vec<Ranked> {
    let mut out: Vec<Ranked> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (hash, idx, score) in frames {
        if !keep(hash) {
            continue;
        }
        match at.get(hash.as_str()) {
            Some(&i) => out[i].frames.push(*idx),
            None => {
                at.insert(hash, out.len());
                out.push(Ranked {
                    hash: hash.clone(),
                    score: *score,
                    frames: vec![*idx],
                });
            }
        }
    }
    // Frames come best first, ties by hash: the memories are in answer order.
    out.truncate(limit as usize);
    out
}

/// Adds to each memory its matching frames outside the first pass (after
/// those inside it, in frame order): only objects of several frames have any.
async fn complete_frames(
    pool: &SqlitePool,
    expression: &str,
    ranked: &mut [Ranked],
) -> Result<(), StorageError> {
    for memory in ranked {
        let (low, high, count): (Option<i64>, Option<i64>, i64) = sqlx::query_as(
            "SELECT MIN(rowid), MAX(rowid), COUNT(*) FROM search_frames WHERE hash = ?",
        )
        .bind(&memory.hash)
        .fetch_one(pool)
        .await?;
        let (Some(low), Some(high)) = (low, high) else {
            continue;
        };
        if count <= memory.frames.len() as i64 {
            continue;
        }
        // No BM25 here: its statistics would cost a scan of every match again.
        let more: Vec<i64> = sqlx::query_scalar(
            "SELECT f.idx FROM search_fts s CROSS JOIN search_frames f ON f.rowid = s.rowid \
             WHERE search_fts MATCH ?1 AND s.rowid >= ?2 AND s.rowid <= ?3 AND f.hash = ?4 \
             ORDER BY f.idx",
        )
        .bind(expression)
        .bind(low)
        .bind(high)
        .bind(&memory.hash)
        .fetch_all(pool)
        .await?;
        for idx in more.into_iter().map(to_u32) {
            if !memory.frames.contains(&idx) {
                memory.frames.push(idx);
            }
        }
    }
    Ok(())
}

/// Every match ranked, in one query: the caller's best `limit` memories.
async fn rank_all(
    pool: &SqlitePool,
    expression: &str,
    filter: &ListQuery,
) -> Result<Vec<Ranked>, StorageError> {
    let mut sql = Statement::new(
        // Materialized, so that bm25() runs in the plain FTS query it needs.
        "WITH hits AS MATERIALIZED (SELECT rowid, bm25(search_fts) AS score \
         FROM search_fts WHERE search_fts MATCH ",
    );
    sql.push_bind(expression.to_owned()).push(
        "), best AS MATERIALIZED (SELECT f.hash AS hash, MIN(h.score) AS score, \
         group_concat(f.idx, ',' ORDER BY h.score, f.idx) AS frames \
         FROM hits h JOIN search_frames f ON f.rowid = h.rowid GROUP BY f.hash) \
         SELECT b.hash, b.score, b.frames FROM best b \
         CROSS JOIN memories m ON m.id = b.hash WHERE m.namespace = ",
    );
    sql.push_bind(filter.namespace.clone());
    push_filters(&mut sql, filter);
    push_visible(&mut sql, now_ms());
    sql.push(" ORDER BY b.score, b.hash LIMIT ")
        .push_bind(i64::from(filter.limit.max(1)));
    let rows = sql.query::<Sqlite>().fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            let frames: String = row.try_get(2)?;
            Ok(Ranked {
                hash: row.try_get(0)?,
                score: row.try_get(1)?,
                frames: frames.split(',').filter_map(|i| i.parse().ok()).collect(),
            })
        })
        .collect()
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

fn to_u32(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
