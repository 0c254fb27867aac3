//! A JSON body extractor bounded by `max_json_bytes`, whose rejections are [`AppError`]s.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;

use super::AppState;
use super::error::AppError;

/// A JSON request body of at most `max_json_bytes`; malformed JSON is a 400,
/// a well-formed body of the wrong shape a 422 naming the field.
pub struct LimitedJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for LimitedJson<T> {
    type Rejection = AppError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let limit = state.config.max_json_bytes;
        let bytes = http_body_util::Limited::new(request.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    AppError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        format!("JSON bodies are limited to {limit} bytes (max_json_bytes)"),
                    )
                    .with("limit", limit)
                } else {
                    AppError::new(
                        StatusCode::BAD_REQUEST,
                        "bad_body",
                        format!("could not read the request body: {e}"),
                    )
                }
            })?
            .to_bytes();
        serde_json::from_slice(&bytes).map(Self).map_err(|e| {
            let status = if e.is_data() {
                StatusCode::UNPROCESSABLE_ENTITY
            } else {
                StatusCode::BAD_REQUEST
            };
            AppError::new(status, "invalid_json", format!("invalid JSON body: {e}"))
        })
    }
}
