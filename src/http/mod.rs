//! The HTTP layer: routers, extractors, errors, OpenAPI. Thin: parse, call the domain, map.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

pub use self::state::{AppState, HttpConfig};

mod admin;
pub mod auth;
mod compress;
mod conditional;
mod console;
mod content;
pub mod error;
mod exchanges;
mod extract;
mod filters;
mod governor;
mod grep;
mod health;
mod json_body;
pub mod limits;
mod mcp;
mod memories;
mod metrics;
pub mod openapi;
mod panic;
mod portable;
pub mod proxy;
mod query;
mod refs;
mod search;
mod slices;
pub mod state;
mod stats;
mod tokens;
pub(crate) mod upstream;
mod usage;
pub mod views;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The documented `/v1` routes (all behind authentication).
fn v1_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(memories::put, memories::list))
        .routes(routes!(memories::get, memories::delete))
        .routes(routes!(content::get))
        .routes(routes!(slices::lines))
        .routes(routes!(slices::bytes))
        .routes(routes!(slices::chunk))
        .routes(routes!(slices::fetch))
        .routes(routes!(grep::grep))
        .routes(routes!(grep::across))
        .routes(routes!(query::query))
        .routes(routes!(usage::post))
        .routes(routes!(exchanges::list))
        .routes(routes!(exchanges::get))
        .routes(routes!(stats::get))
        .routes(routes!(tokens::count))
        .routes(routes!(compress::compress))
        .routes(routes!(governor::governor))
        .routes(routes!(portable::export))
        .routes(routes!(portable::import))
        .routes(routes!(search::get))
        .routes(routes!(refs::get))
        .routes(routes!(admin::prune))
        .routes(routes!(admin::gc))
        .routes(routes!(admin::verify))
}

/// The documented routes open to everyone, inside the document's frame.
fn public_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
}

/// The OpenAPI document of the API (served at `/openapi.json`).
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let mut doc = public_routes().merge(v1_routes()).into_openapi();
    openapi::complete(&mut doc);
    doc
}

/// The whole application: API routes, `/openapi.json`, `/docs`, and the common layers.
pub fn router(state: AppState) -> Router {
    // The key check runs first (the outer layer), then the namespace's limits.
    let v1 = v1_routes()
        .route_layer(axum::middleware::from_fn_with_state(
            state.limits.clone(),
            limits::enforce,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            auth::require_caller,
        ));
    let mcp = Router::new()
        .route_service("/mcp", mcp::service(state.clone()))
        .route_layer(axum::middleware::from_fn_with_state(
            state.limits.clone(),
            limits::enforce,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            auth::require_caller,
        ));
    let (api, mut doc) = public_routes().merge(v1).split_for_parts();
    openapi::complete(&mut doc);
    api.merge(SwaggerUi::new("/docs").url("/openapi.json", doc))
        .merge(mcp)
        .merge(proxy::routes())
        .merge(console::routes())
        .route("/metrics", axum::routing::get(metrics::get))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(error::log_server_errors))
        .layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::track,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.search.foreground().clone(),
            metrics::foreground,
        ))
        .layer(DefaultBodyLimit::disable())
        .layer(CatchPanicLayer::custom(panic::respond))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    let route = request
                        .extensions()
                        .get::<axum::extract::MatchedPath>()
                        .map_or("unmatched", |p| p.as_str())
                        .to_owned();
                    let id = request
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    tracing::info_span!(
                        "http.request",
                        method = %request.method(),
                        route,
                        request_id = id,
                        tokens_before = tracing::field::Empty,
                        tokens_after = tracing::field::Empty,
                    )
                })
                // One line per request at info: route, status, latency (and a
                // proxied exchange's tokens before and after, in its span).
                .on_response(
                    tower_http::trace::DefaultOnResponse::new()
                        .level(tracing::Level::INFO)
                        .latency_unit(tower_http::LatencyUnit::Millis),
                ),
        )
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> error::AppError {
    error::AppError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for `{}`; see /openapi.json", uri.path()),
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> error::AppError {
    error::AppError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on `{}`; see /openapi.json",
            uri.path()
        ),
    )
}

/// Serves `router` on an already-bound listener until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
