//! Extractors whose rejections are [`AppError`]s, so bad input always gets our JSON error.

use axum::extract::{FromRequestParts, Path, Query};

use super::error::AppError;

/// Query parameters; a malformed query is a 400 `invalid_query`.
#[derive(FromRequestParts)]
#[from_request(via(Query), rejection(AppError))]
pub struct ApiQuery<T>(pub T);

/// Path parameters; a malformed path is a 400 `invalid_path`.
#[derive(FromRequestParts)]
#[from_request(via(Path), rejection(AppError))]
pub struct ApiPath<T>(pub T);
