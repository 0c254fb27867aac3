//! `/v1/admin/*`: prune, GC and verify. Admin keys only (without keys, the one
//! default caller is admin).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::filters::list_query;
use super::state::AppState;
use super::views::rfc3339;
use crate::domain::maintenance::retention::{PruneRequest, RetentionRule};
use crate::model::MemoryFilter;
use crate::storage::meta::PruneOrder;

/// Answers 403 unless the caller holds an admin key.
fn require_admin(caller: &Caller) -> Result<(), AppError> {
    if caller.admin {
        Ok(())
    } else {
        Err(AppError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this endpoint needs an admin key (`key:namespace:admin` in CAIRN_API_KEYS)",
        ))
    }
}

/// Parses a JSON body; an empty body is the defaults.
fn body<T: DeserializeOwned + Default>(bytes: &Bytes) -> Result<T, AppError> {
    if bytes.is_empty() {
        return Ok(T::default());
    }
    super::json_body::parse(bytes).map_err(|e| {
        let status = if e.is_data() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        AppError::new(status, "invalid_json", format!("invalid JSON body: {e}"))
    })
}

/// Longest GC grace period a request may ask for: ten years.
const MAX_GRACE_SECONDS: u64 = 315_360_000;

/// Removal order of a prune.
#[derive(Deserialize, ToSchema, Default, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum OrderParam {
    /// Oldest creation first (default).
    #[default]
    Oldest,
    /// Fewest reads first, then the longest unread.
    LeastAccessed,
}

/// What a prune keeps, which memories it looks at, and whether it only reports.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct PruneBody {
    /// Remove memories created more than this many days ago.
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub keep_days: Option<u64>,
    /// Keep at most this many memories of the filter (pinned ones count and stay).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub keep_entries: Option<u64>,
    /// Keep at most this many content bytes of the filter (pinned ones count and stay).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub max_bytes: Option<u64>,
    /// Which go first: `oldest` (default) or `least_accessed`.
    #[serde(default)]
    pub order: OrderParam,
    /// Which memories the rule looks at: the filter of a listing.
    #[serde(flatten)]
    pub filter: MemoryFilter,
    /// Report what would go, change nothing (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// A memory a prune removed.
#[derive(Serialize, ToSchema)]
pub struct PrunedView {
    /// Memory id.
    pub id: String,
    /// Content bytes.
    pub bytes: u64,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Latest read (RFC 3339), if any.
    pub last_accessed_at: Option<String>,
    /// Reads.
    pub access_count: i64,
}

/// What a prune removed (or would remove, dry).
#[derive(Serialize, ToSchema)]
pub struct PruneView {
    /// The removed memories, in removal order.
    pub removed: Vec<PrunedView>,
    /// How many.
    pub removed_count: u64,
    /// Their content bytes.
    pub removed_bytes: u64,
    /// Memories of the filter that stay.
    pub kept_count: u64,
    /// True when nothing was changed.
    pub dry_run: bool,
}

/// Removes memories of the caller's namespace by age, count or total size,
/// oldest or least accessed first; pinned memories are never removed.
#[utoipa::path(
    post, path = "/v1/admin/prune", tag = "admin",
    request_body(content = PruneBody, content_type = "application/json"),
    responses(
        (status = 200, body = PruneView),
        (status = 400, description = "No rule given", body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn prune(
    State(state): State<AppState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<PruneView>, AppError> {
    require_admin(&caller)?;
    let body: PruneBody = body(&bytes)?;
    let report = state
        .maintenance
        .prune(&body.request(caller.namespace)?)
        .await?;
    Ok(Json(PruneView {
        removed_count: report.removed.len() as u64,
        removed_bytes: report.removed_bytes,
        kept_count: report.kept_count,
        dry_run: report.dry_run,
        removed: report
            .removed
            .into_iter()
            .map(|r| PrunedView {
                id: r.id,
                bytes: r.bytes,
                created_at: rfc3339(r.created_at),
                last_accessed_at: r.last_accessed_at.map(rfc3339),
                access_count: r.access_count,
            })
            .collect(),
    }))
}

impl PruneBody {
    /// The prune this body asks for in `namespace`.
    fn request(self, namespace: String) -> Result<PruneRequest, AppError> {
        let rule = RetentionRule {
            keep_days: self.keep_days,
            keep_entries: self.keep_entries,
            max_bytes: self.max_bytes,
        };
        if rule.is_empty() {
            return Err(AppError::bad_request(
                "give at least one of `keep_days`, `keep_entries`, `max_bytes`",
            ));
        }
        Ok(PruneRequest {
            filter: list_query(self.filter, namespace, 0)?,
            rule,
            order: match self.order {
                OrderParam::Oldest => PruneOrder::Oldest,
                OrderParam::LeastAccessed => PruneOrder::LeastAccessed,
            },
            dry_run: self.dry_run,
        })
    }
}

/// GC options.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct GcBody {
    /// Keep objects unreferenced for less than this (default: CAIRN_GC_GRACE_SECS, 3600; at most ten years).
    #[schema(maximum = 315_360_000)]
    pub grace_seconds: Option<u64>,
    /// Report what would go, change nothing (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// What GC removed.
#[derive(Serialize, ToSchema)]
pub struct GcView {
    /// Objects no memory referred to, removed (row and file).
    pub removed_objects: u64,
    /// Stored bytes they took.
    pub removed_bytes: u64,
    /// Unreferenced objects kept: within the grace period.
    pub kept_recent: u64,
    /// Object files without any metadata (crash leftovers), older than the grace period, removed.
    pub removed_orphan_files: u64,
    /// True when nothing was changed.
    pub dry_run: bool,
}

/// Removes objects (of every namespace) that no memory refers to and that
/// have been unreferenced for longer than the grace period.
#[utoipa::path(
    post, path = "/v1/admin/gc", tag = "admin",
    request_body(content = GcBody, content_type = "application/json"),
    responses(
        (status = 200, body = GcView),
        (status = 403, description = "Not an admin key", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn gc(
    State(state): State<AppState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<GcView>, AppError> {
    require_admin(&caller)?;
    let body: GcBody = body(&bytes)?;
    if body.grace_seconds.is_some_and(|g| g > MAX_GRACE_SECONDS) {
        return Err(AppError::bad_request(format!(
            "`grace_seconds` is at most {MAX_GRACE_SECONDS} (ten years)"
        ))
        .with("field", "grace_seconds"));
    }
    let report = state
        .maintenance
        .gc(body.grace_seconds.map(Duration::from_secs), body.dry_run)
        .await?;
    Ok(Json(GcView {
        removed_objects: report.removed_objects,
        removed_bytes: report.removed_bytes,
        kept_recent: report.kept_recent,
        removed_orphan_files: report.removed_orphan_files,
        dry_run: report.dry_run,
    }))
}

/// Verify options.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct VerifyBody {
    /// Move corrupt objects to quarantine and mark their memories (default false).
    #[serde(default)]
    pub repair: bool,
}

/// An object that failed a check.
#[derive(Serialize, ToSchema)]
pub struct CorruptView {
    /// Content hash (the id of its memories).
    pub id: String,
    /// Which check failed.
    pub detail: String,
}

/// A memory whose object row is missing.
#[derive(Serialize, ToSchema)]
pub struct OrphanRowView {
    /// Its namespace.
    pub namespace: String,
    /// Its id.
    pub id: String,
}

/// What verify found.
#[derive(Serialize, ToSchema)]
pub struct VerifyView {
    /// Objects checked.
    pub checked_objects: u64,
    /// Objects that passed.
    pub ok: u64,
    /// Objects whose file is gone.
    pub missing: Vec<String>,
    /// Objects that failed a frame checksum, a length or the SHA-256 of their content.
    pub corrupt: Vec<CorruptView>,
    /// Files that no object row names.
    pub orphaned_files: Vec<String>,
    /// Memories whose object row is gone.
    pub orphaned_rows: Vec<OrphanRowView>,
    /// With repair: objects moved to quarantine.
    pub quarantined: u64,
    /// With repair: memories marked corrupt (reads then answer `integrity_error`).
    pub marked_memories: u64,
}

/// Checks every object's frames and hash, and metadata against objects both ways.
#[utoipa::path(
    post, path = "/v1/admin/verify", tag = "admin",
    request_body(content = VerifyBody, content_type = "application/json"),
    responses(
        (status = 200, body = VerifyView),
        (status = 403, description = "Not an admin key", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn verify(
    State(state): State<AppState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<VerifyView>, AppError> {
    require_admin(&caller)?;
    let body: VerifyBody = body(&bytes)?;
    let report = state.maintenance.verify(body.repair).await?;
    Ok(Json(VerifyView {
        checked_objects: report.checked_objects,
        ok: report.ok,
        missing: report.missing,
        corrupt: report
            .corrupt
            .into_iter()
            .map(|c| CorruptView {
                id: c.id,
                detail: c.detail,
            })
            .collect(),
        orphaned_files: report.orphaned_files,
        orphaned_rows: report
            .orphaned_rows
            .into_iter()
            .map(|(namespace, id)| OrphanRowView { namespace, id })
            .collect(),
        quarantined: report.quarantined,
        marked_memories: report.marked_memories,
    }))
}
