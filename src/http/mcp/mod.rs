//! `POST /mcp`: the Model Context Protocol over streamable HTTP.
//!
//! Stateless (no session to keep, so any replica answers any request) with
//! plain JSON answers. Authentication is the REST API's: the route sits behind
//! the same bearer-key layer, and every tool works in the caller's namespace.
//! The LLM proxy offers three of these tools to the model and answers its
//! calls with the same functions (`proxied.rs`).

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::http::state::AppState;

pub(crate) mod params;
pub(crate) mod proxied;
pub(crate) mod tools;

/// The MCP endpoint as a tower service, ready to mount at `/mcp`.
pub fn service(state: AppState) -> StreamableHttpService<tools::CairnTools, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(state.config.max_json_bytes)
        // Host and Origin are checked by the authentication layer (keyless
        // servers accept loopback only); servers with keys may have any name.
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(tools::CairnTools::new(state.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
