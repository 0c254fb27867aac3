//! Row mapping shared by the SQLite and PostgreSQL stores: both select the
//! same column names, so a memory, frame, usage or calibration row reads the
//! same way from either; and the record a put makes, which both answer alike.

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::super::{
    CalibrationRow, FrameEntry, MemoryFields, MemoryRecord, NewMemory, PageEntry, UsageRow,
};
use super::Dialect;
use crate::storage::StorageError;

/// Stored integers (i64) into sizes; sizes are never negative.
pub(in crate::storage::meta) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Sizes into stored integers (i64), saturating.
pub(in crate::storage::meta) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A memory row selected with [`Dialect::MEMORY_SELECT`].
pub(in crate::storage::meta) fn memory_from_row<'r, DB>(
    row: &'r DB::Row,
) -> Result<MemoryRecord, StorageError>
where
    DB: Dialect,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    String: Decode<'r, DB> + Type<DB>,
    i64: Decode<'r, DB> + Type<DB>,
    bool: Decode<'r, DB> + Type<DB>,
{
    memory_record(row, DB::tags(row)?)
}

/// A memory row joined with its object, with its tags.
fn memory_record<'r, R>(row: &'r R, tags: Vec<String>) -> Result<MemoryRecord, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(MemoryRecord {
        namespace: row.try_get("namespace")?,
        id: row.try_get("id")?,
        fields: MemoryFields {
            kind: row.try_get("type")?,
            subtype: row.try_get("subtype")?,
            mime: row.try_get("mime")?,
            title: row.try_get("title")?,
            tags,
            thread: row.try_get("thread")?,
            checkpoint: row.try_get("checkpoint")?,
            directory: row.try_get("directory")?,
            pinned: row.try_get("pinned")?,
            ttl_seconds: None,
        },
        bytes: to_u64(row.try_get("bytes")?),
        stored_bytes: to_u64(row.try_get("stored_bytes")?),
        lines: to_u64(row.try_get("lines")?),
        tokens: to_u64(row.try_get("tokens")?),
        token_method: row.try_get("token_method")?,
        tokens_settling: row.try_get("tokens_settling")?,
        summary: row.try_get("summary")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_accessed_at: row.try_get("last_accessed_at")?,
        access_count: row.try_get("access_count")?,
        expires_at: row.try_get("expires_at")?,
        corrupt: row.try_get("corrupt")?,
    })
}

/// A row of the `frames` table.
pub(in crate::storage::meta) fn frame_entry<'r, R>(row: &'r R) -> Result<FrameEntry, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(FrameEntry {
        content_offset: to_u64(row.try_get("content_offset")?),
        content_len: u32::try_from(row.try_get::<i64, _>("content_len")?).unwrap_or(0),
        first_line: to_u64(row.try_get("first_line")?),
        stored_offset: to_u64(row.try_get("stored_offset")?),
        stored_len: u32::try_from(row.try_get::<i64, _>("stored_len")?).unwrap_or(0),
        pages: PageEntry::decode(&row.try_get::<Vec<u8>, _>("pages")?),
    })
}

/// A row of summed usage (`namespace, model, day, input_tokens, output_tokens, cost_usd, reports`).
pub(in crate::storage::meta) fn usage_row<'r, R>(row: &'r R) -> Result<UsageRow, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    f64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(UsageRow {
        namespace: row.try_get("namespace")?,
        model: row.try_get("model")?,
        day: row.try_get("day")?,
        input_tokens: row.try_get("input_tokens")?,
        output_tokens: row.try_get("output_tokens")?,
        cost_usd: row.try_get("cost_usd")?,
        reports: row.try_get("reports")?,
    })
}

/// A row of `ledger_calibration`.
pub(in crate::storage::meta) fn calibration_row<'r, R>(
    row: &'r R,
) -> Result<CalibrationRow, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    f64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(CalibrationRow {
        namespace: row.try_get("namespace")?,
        model: row.try_get("model")?,
        factor: row.try_get("factor")?,
        samples: row.try_get("samples")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// The record of a memory created over a new object: everything is known
/// already, tags as a read gives them back (sorted, once each).
pub(in crate::storage::meta) fn fresh_record(put: &NewMemory) -> MemoryRecord {
    let mut fields = put.fields.clone();
    fields.tags.sort();
    fields.tags.dedup();
    MemoryRecord {
        namespace: put.namespace.clone(),
        id: put.object.hash.clone(),
        fields,
        bytes: put.object.bytes,
        stored_bytes: put.object.stored_bytes,
        lines: put.object.lines,
        tokens: put.tokens,
        token_method: put.token_method.clone(),
        tokens_settling: put.tokens_settling,
        summary: put.summary.clone(),
        created_at: put.now,
        updated_at: put.now,
        last_accessed_at: None,
        access_count: 0,
        expires_at: expiry(put.now, put.fields.ttl_seconds),
        corrupt: None,
    }
}

/// When a memory put at `now` with this time to live expires. A put of
/// content already stored keeps the later expiry of the two (none: never).
pub(in crate::storage::meta) fn expiry(now: i64, ttl_seconds: Option<u64>) -> Option<i64> {
    ttl_seconds.map(|ttl| now.saturating_add(to_i64(ttl).saturating_mul(1000)))
}
