//! The console at `/ui`: sessions, exchanges, memories and savings in the
//! browser, rendered on the server (maud templates: every value escaped),
//! with its stylesheet and one small script embedded in the binary. A key
//! signs in once for a session cookie; a Content-Security-Policy allows no
//! inline script and nothing from elsewhere.

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use super::error::AppError;
use crate::domain::DomainError;
use crate::domain::proxying::exchanges::{ExchangeFilter, ExchangeRecord};
use crate::http::state::AppState;

mod exchange;
mod layout;
mod login;
mod memories;
mod memory;
mod savings;
mod threads;
mod transcript;
mod viewer;

pub use login::Sessions;

/// What every console answer may load and do: its own script and stylesheet,
/// nothing inline, nothing from elsewhere, no framing.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = include_str!("assets/console.css");
const SCRIPT: &str = include_str!("assets/console.js");

/// The console's routes (their own sessions; the API's keys sign in).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(threads::list))
        .route("/ui/login", get(login::form).post(login::submit))
        .route("/ui/logout", post(login::logout))
        .route("/ui/session", get(threads::one))
        .route("/ui/exchanges/{id}", get(exchange::show))
        .route("/ui/memories", get(memories::list))
        .route("/ui/memories/{id}", get(memory::show))
        .route("/ui/memories/{id}/download", get(memory::download))
        .route("/ui/memories/{id}/delete", post(memory::delete))
        .route("/ui/savings", get(savings::show))
        .route("/ui/assets/console.css", get(|| asset(STYLE, "text/css")))
        .route(
            "/ui/assets/console.js",
            get(|| asset(SCRIPT, "text/javascript")),
        )
        .layer(axum::Extension(Sessions::new()))
        .layer(axum::middleware::from_fn(guard))
}

async fn asset(text: &'static str, mime: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(mime)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        text,
    )
        .into_response()
}

/// Refuses a form post from another site's page (its `Origin` names
/// another host than the request's `Host`, or is `null`), then puts on
/// every console answer the policy, no sniffing, no framing, and a referrer
/// only for the console itself (`same-origin`: under `no-referrer` browsers
/// send `Origin: null` with the console's own forms).
async fn guard(request: Request, next: Next) -> Response {
    if request.method() == Method::POST && foreign_origin(request.headers()) {
        return layout::failure(
            None,
            StatusCode::FORBIDDEN,
            "A form of the console was sent from another site.",
        );
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// True when the request's `Origin` is present and is not the host it was sent to.
fn foreign_origin(headers: &HeaderMap) -> bool {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(origin) = header(header::ORIGIN) else {
        return false;
    };
    let origin_host = origin.split("://").nth(1).unwrap_or(origin);
    header(header::HOST).is_none_or(|host| !origin_host.eq_ignore_ascii_case(host))
}

/// The namespace's newest exchanges matching `filter`, up to `max`, or the
/// error page.
async fn newest(
    state: &AppState,
    viewer: &viewer::Viewer,
    filter: ExchangeFilter,
    max: u32,
) -> Result<Vec<ExchangeRecord>, Response> {
    state
        .exchanges
        .newest(&viewer.namespace, filter, max)
        .await
        .map_err(|e| domain_failure(viewer, e))
}

/// The error page of a domain error, with the API's status and message.
fn domain_failure(viewer: &viewer::Viewer, e: DomainError) -> Response {
    let e = AppError::from(e);
    let status = e.status();
    if status.is_server_error() {
        tracing::error!(error = %e.message(), "console page failed");
    }
    let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
        "Something went wrong on the server; the log has the details."
    } else {
        e.message()
    };
    layout::failure(Some(viewer), status, message)
}
