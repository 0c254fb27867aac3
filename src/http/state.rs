//! What every handler reaches: the application's services and the HTTP
//! layer's own limits. Handlers import it from here rather than from the
//! module that builds the router; it imports only the types it holds
//! (`auth`, `limits`, the proxy's `upstream`), no handler.

use std::sync::Arc;

use super::auth::Auth;
use super::limits::Limits;
use super::upstream::Proxy;
use crate::domain::compress::Compressor;
use crate::domain::governor::GovernorConfig;
use crate::domain::ledger::Ledger;
use crate::domain::memories::Memories;
use crate::domain::search::Search;
use crate::storage::blob::BlobStore;
use crate::storage::meta::MetaStore;

/// Limits of the HTTP layer itself.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Largest JSON body (JSON puts hold their content in memory).
    pub max_json_bytes: usize,
}

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The memory service.
    pub memories: Arc<Memories>,
    /// Per-namespace accounting (savings, usage, budgets).
    pub ledger: Arc<Ledger>,
    /// Per-namespace request limits.
    pub limits: Arc<Limits>,
    /// The record of every proxied exchange.
    pub exchanges: Arc<crate::domain::proxying::exchanges::ExchangeLedger>,
    /// The metadata store (for readiness).
    pub meta: Arc<dyn MetaStore>,
    /// The blob store (for readiness).
    pub blobs: Arc<dyn BlobStore>,
    /// API keys.
    pub auth: Arc<Auth>,
    /// HTTP limits.
    pub config: Arc<HttpConfig>,
    /// Message-list compression (`/v1/compress`, `/v1/governor`).
    pub compressor: Arc<Compressor>,
    /// Governor limits (global, per model, per namespace).
    pub governor: Arc<GovernorConfig>,
    /// Full-text search and refs.
    pub search: Arc<Search>,
    /// Prune, GC and verify.
    pub maintenance: Arc<crate::domain::maintenance::retention::Maintenance>,
    /// What `/metrics` exposes.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The LLM proxy's upstreams and settings.
    pub proxy: Arc<Proxy>,
    /// Bounds of jq queries.
    pub jq: Arc<crate::domain::memories::jq::JqLimits>,
    /// The shared hot cache, when configured (for `/readyz`).
    pub cache: Option<Arc<crate::storage::cache::redis::RedisCache>>,
}
