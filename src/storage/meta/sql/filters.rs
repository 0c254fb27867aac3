//! The field filters of a listing, a search, a grep or a prune: one builder
//! for every query that narrows memories `m` by their fields.

use super::super::ListQuery;
use super::Statement;

/// Appends ` AND` the memory `m` is not expired at `now` (pinned ones never are).
pub(in crate::storage::meta) fn push_visible(sql: &mut Statement, now: i64) {
    sql.push(" AND (m.expires_at IS NULL OR m.pinned OR m.expires_at > ")
        .push_bind(now)
        .push(")");
}

/// Appends ` AND …` for each field the query sets, on memories `m`.
pub(in crate::storage::meta) fn push_filters(sql: &mut Statement, query: &ListQuery) {
    let exact = [
        ("m.type", &query.kind),
        ("m.subtype", &query.subtype),
        ("m.thread", &query.thread),
        ("m.checkpoint", &query.checkpoint),
        ("m.directory", &query.directory),
    ];
    for (column, value) in exact {
        if let Some(value) = value {
            sql.push(&format!(" AND {column} = "))
                .push_bind(value.clone());
        }
    }
    if let Some(tag) = &query.tag {
        sql.push(
            " AND EXISTS (SELECT 1 FROM memory_tags t \
             WHERE t.namespace = m.namespace AND t.id = m.id AND t.tag = ",
        )
        .push_bind(tag.clone())
        .push(")");
    }
    if let Some(since) = query.since {
        sql.push(" AND m.created_at >= ").push_bind(since);
    }
    if let Some(until) = query.until {
        sql.push(" AND m.created_at < ").push_bind(until);
    }
}
