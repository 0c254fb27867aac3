//! Full-text search on PostgreSQL: `to_tsvector('simple', …)` rows per part
//! of a frame (see [`super::tsquery::parts`]), the pending queue,
//! and the ranked query joined through the caller's memories (so nothing of
//! another namespace can match).
//!
//! A frame matches when the expression holds over the words of all its
//! parts together, as an FTS5 row of the whole frame would: each phrase is
//! looked up per part (`bool_or`) and the expression combines the answers.

use sqlx::{PgPool, Postgres, Row};

use super::super::sql::{Dialect, Statement, push_filters, push_visible, rows::memory_from_row};
use super::super::{FrameBatch, ListQuery, SearchRow};
use super::puts::with_retry;
use super::tsquery::{self, Expr};
use crate::clock::now_ms;
use crate::storage::StorageError;

/// The parts of one frame, normalized for `to_tsvector`.
struct FrameParts {
    idx: i64,
    parts: Vec<String>,
}

/// Adds a batch of frames to the index (a frame indexed already is skipped).
pub(super) async fn index(pool: &PgPool, batch: FrameBatch) -> Result<(), StorageError> {
    let hash = batch.hash.clone();
    let done = batch.done;
    // Lower-casing and splitting up to megabytes of text: off the async workers.
    let frames = tokio::task::spawn_blocking(move || {
        batch
            .frames
            .iter()
            .map(|f| FrameParts {
                idx: i64::from(f.idx),
                parts: tsquery::parts(&f.text)
                    .into_iter()
                    .map(tsquery::normalize)
                    .collect(),
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| StorageError::internal(format!("indexing task failed: {e}")))?;
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        // Held until commit, so that a GC cannot remove the object under the new rows.
        let exists = sqlx::query("SELECT 1 FROM objects WHERE hash = $1 FOR SHARE")
            .bind(&hash)
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if exists && !frames.is_empty() {
            let idxs: Vec<i64> = frames.iter().map(|f| f.idx).collect();
            let fresh: Vec<i64> = sqlx::query_scalar(
                "INSERT INTO search_frames (hash, idx) SELECT $1, UNNEST($2::BIGINT[]) \
                 ON CONFLICT DO NOTHING RETURNING idx",
            )
            .bind(&hash)
            .bind(&idxs)
            .fetch_all(&mut *tx)
            .await?;
            let (mut idx, mut part, mut text) = (Vec::new(), Vec::new(), Vec::<&str>::new());
            for frame in frames.iter().filter(|f| fresh.contains(&f.idx)) {
                for (n, body) in frame.parts.iter().enumerate() {
                    idx.push(frame.idx);
                    part.push(i32::try_from(n).unwrap_or(i32::MAX));
                    text.push(body);
                }
            }
            if !idx.is_empty() {
                sqlx::query(
                    "INSERT INTO search_parts (hash, idx, part, body) \
                     SELECT $1, i, p, to_tsvector('simple', t) \
                     FROM UNNEST($2::BIGINT[], $3::INT[], $4::TEXT[]) AS x(i, p, t) \
                     ON CONFLICT DO NOTHING",
                )
                .bind(&hash)
                .bind(&idx)
                .bind(&part)
                .bind(&text)
                .execute(&mut *tx)
                .await?;
            }
        }
        if done || !exists {
            sqlx::query("DELETE FROM search_pending WHERE hash = $1")
                .bind(&hash)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await
    })
    .await
}

/// Memories whose frames match `expression` (an FTS5 expression), best `ts_rank` first.
pub(super) async fn search(
    pool: &PgPool,
    expression: &str,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    let expr = tsquery::parse(expression).map_err(StorageError::Database)?;
    let any = expr
        .phrases()
        .iter()
        .map(|p| p.tsquery())
        .collect::<Vec<_>>()
        .join(" | ");
    let mut sql = Statement::new(
        "WITH cand AS (SELECT p.hash, p.idx, p.body FROM search_parts p \
         WHERE p.body @@ to_tsquery('simple', ",
    );
    sql.push_bind(any)
        .push(") AND p.hash IN (SELECT id FROM memories WHERE namespace = ")
        .push_bind(filter.namespace.clone())
        .push(")), hits AS (SELECT hash, idx, MAX(ts_rank(body, to_tsquery('simple', ")
        .push_bind(expr.tsquery())
        .push("))) AS rank FROM cand GROUP BY hash, idx HAVING ");
    push_match(&mut sql, &expr);
    sql.push(
        "), best AS (SELECT hash, MAX(rank) AS rank, array_agg(idx ORDER BY rank DESC, idx) AS frames \
         FROM hits GROUP BY hash) ",
    );
    sql.push(&Postgres::MEMORY_SELECT.replacen(
        "SELECT ",
        "SELECT (-b.rank)::FLOAT8 AS score, b.frames AS frames, ",
        1,
    ));
    sql.push(" JOIN best b ON b.hash = m.id WHERE m.namespace = ")
        .push_bind(filter.namespace.clone());
    push_filters(&mut sql, filter);
    push_visible(&mut sql, now_ms());
    sql.push(" ORDER BY b.rank DESC, m.id LIMIT ")
        .push_bind(i64::from(filter.limit));
    // The planner prices a sequential scan of `search_parts` without its
    // out-of-line tsvectors, so it scans every row (and detoasts every
    // tsvector) rather than ask the GIN index: measured at 100,000
    // memories, a word in 4 of them took 512 ms that way, 8 ms through the index.
    let mut tx = pool.begin().await?;
    sqlx::query("SET LOCAL enable_seqscan = off")
        .execute(&mut *tx)
        .await?;
    let rows = sql.query::<Postgres>().fetch_all(&mut *tx).await?;
    tx.commit().await?;
    rows.iter()
        .map(|row| {
            let frames: Vec<i64> = row.try_get("frames")?;
            Ok(SearchRow {
                record: memory_from_row::<Postgres>(row)?,
                score: row.try_get("score")?,
                frames: frames
                    .into_iter()
                    .filter_map(|i| u32::try_from(i).ok())
                    .collect(),
            })
        })
        .collect()
}

/// The expression over a frame's parts: a phrase holds when some part has it.
fn push_match(sql: &mut Statement, expr: &Expr) {
    let (left, op, right) = match expr {
        Expr::Phrase { .. } => {
            sql.push("bool_or(body @@ to_tsquery('simple', ")
                .push_bind(expr.tsquery())
                .push("))");
            return;
        }
        Expr::And(l, r) => (l, " AND ", r),
        Expr::Or(l, r) => (l, " OR ", r),
        Expr::Not(l, r) => (l, " AND NOT ", r),
    };
    sql.push("(");
    push_match(sql, left);
    sql.push(op);
    push_match(sql, right);
    sql.push(")");
}
