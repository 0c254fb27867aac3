//! Building the application from its configuration, and running it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::Config;
use crate::domain::compress::Compressor;
use crate::domain::ledger::pricing::Pricing;
use crate::domain::ledger::{Budgets, Ledger, LedgerConfig, SystemClock};
use crate::domain::maintenance::retention::{Maintenance, RetentionPolicy, RetentionRule};
use crate::domain::memories::Memories;
use crate::domain::memories::access::AccessRecorder;
use crate::domain::memories::ingest::IngestConfig;
use crate::domain::memories::read::frame_cache::FrameCache;
use crate::domain::memories::read::slicing::SliceLimits;
use crate::domain::proxying::exchanges::ExchangeLedger;
use crate::domain::search::Search;
use crate::domain::summarizer::Summarizer;
use crate::domain::summary::jobs;
use crate::http::{self, AppState, HttpConfig, auth::Auth};
use crate::metrics::Metrics;
use crate::storage::blob::BlobStore;
use crate::storage::blob::fs::FsBlobStore;
use crate::storage::blob::s3::{S3BlobStore, S3Url};
use crate::storage::cache::redis::{RedisCache, RedisSettings};
use crate::storage::cache::{CachedBlobStore, CachedMetaStore, LocalObjectCache};
use crate::storage::meta::postgres::PgMetaStore;
use crate::storage::meta::sqlite::SqliteMetaStore;
use crate::storage::meta::{MetaStore, ObjectStore};

/// A built application: its state and the background work to stop with it.
pub struct App {
    /// Shared state for the router.
    pub state: AppState,
    access: Arc<AccessRecorder>,
    flusher: tokio::task::JoinHandle<()>,
    ledger_flusher: tokio::task::JoinHandle<()>,
    /// Expiry and the background retention policy.
    sweeper: tokio::task::JoinHandle<()>,
    /// The LLM summary task, when configured.
    summarizer: Option<tokio::task::JoinHandle<()>>,
    /// The background search indexer, unless turned off.
    indexer: Option<tokio::task::JoinHandle<()>>,
    /// The counts a stopped process left unmade, made at start.
    settler: tokio::task::JoinHandle<()>,
}

impl App {
    /// Opens the stores the configuration names.
    pub async fn build(config: &Config) -> anyhow::Result<Self> {
        config.validate().map_err(anyhow::Error::msg)?;
        let warm_up = tokio::task::spawn_blocking(crate::domain::warm_up);
        let auth = Auth::parse(config.api_keys.as_deref())
            .map_err(anyhow::Error::msg)?
            .guard_loopback(config.listen.ip().is_loopback());
        std::fs::create_dir_all(&config.data_dir).with_context(|| {
            format!("cannot create data directory {}", config.data_dir.display())
        })?;
        let ledger_config = LedgerConfig {
            pricing: Pricing::load(config.pricing_file.as_deref(), &config.default_model)
                .map_err(anyhow::Error::msg)?,
            budgets: Budgets::parse(
                config.daily_token_budget,
                config.daily_cost_budget_usd,
                config.budgets.as_deref(),
            )
            .map_err(|e| anyhow::anyhow!("budgets: {e}"))?,
        };
        let governor = config.governor().map_err(anyhow::Error::msg)?;
        let metrics = Arc::new(Metrics::new());
        let cache = open_cache(config, &metrics)?;
        let meta: Arc<dyn MetaStore> = open_meta(&config.database_url(), &config.data_dir).await?;
        // Wrapped before anything takes a clone: every reader shares cached
        // object records, and GC's removals invalidate them.
        let meta: Arc<dyn MetaStore> = match &cache {
            Some(cache) => Arc::new(CachedMetaStore::new(meta, cache.clone())),
            None => meta,
        };
        let mut ledger = Ledger::open(meta.clone(), ledger_config, Arc::new(SystemClock))
            .await
            .context("cannot load the accounting ledger")?
            .with_metrics(metrics.clone());
        if let Some(cache) = &cache {
            // Budgets hold across replicas: today's spend is counted in Redis too.
            ledger = ledger.with_shared_spend(cache.clone());
        }
        let ledger = Arc::new(ledger);
        let ledger_flusher = ledger.spawn_flusher(Duration::from_secs(1));
        let blobs: Arc<dyn BlobStore> = open_blobs(config)?;
        // Slices read through the shared cache; verify, GC and export see the store itself.
        let reading_blobs: Arc<dyn BlobStore> = match &cache {
            Some(cache) => Arc::new(CachedBlobStore::new(blobs.clone(), cache.clone())),
            None => blobs.clone(),
        };
        // Slices and search's hit lines share these (the indexer reads past them).
        let frame_cache = Arc::new(FrameCache::new(config.frame_cache_bytes, metrics.clone()));
        let object_cache: Arc<dyn ObjectStore> = Arc::new(LocalObjectCache::new(
            meta.clone(),
            config.object_cache_bytes,
            metrics.clone(),
        ));
        let access = Arc::new(AccessRecorder::default());
        let flusher = access.spawn_flusher(meta.clone(), Duration::from_secs(1));
        let memories = Memories::new(
            meta.clone(),
            reading_blobs.clone(),
            IngestConfig {
                frame_bytes: config.frame_bytes,
                zstd_level: config.zstd_level,
                raw_inline_max: config.inline_max_bytes,
                inline_object_max: config.inline_object_max_bytes,
                max_upload_bytes: config.max_upload_bytes,
                // Two frames more than cores: the workers never wait for the
                // reader to fill the next frame.
                parallelism: std::thread::available_parallelism().map_or(2, |n| n.get()) + 2,
                exact_tokens_max: config.exact_tokens_max_bytes,
                exact_tokens_after: config.exact_tokens_after_bytes,
            },
            SliceLimits {
                max_lines: config.max_slice_lines,
                max_bytes: config.max_slice_bytes,
                default_lines: config.default_slice_lines,
                chunk_bytes: config.chunk_bytes,
                grep_scan_bytes: config.grep_scan_bytes,
            },
            access.clone(),
        )
        .with_redaction(config.redact)
        .with_frame_cache(frame_cache.clone())
        .with_objects(object_cache.clone())
        .with_metrics(metrics.clone());
        let (queue, summarizer) = match &config.summarizer_url {
            Some(url) => {
                let model = crate::llm::ChatCompletions::new(
                    url,
                    &config.summarizer_model,
                    config.summarizer_api_key.clone(),
                    Duration::from_secs(config.summarizer_timeout_secs),
                )?;
                let (queue, jobs) =
                    jobs::queue(config.summarizer_queue, config.summarizer_min_bytes);
                (Some(queue), Some(Summarizer::new(Arc::new(model), jobs)))
            }
            None => (None, None),
        };
        let search = Arc::new(Search::new(meta.clone(), blobs.clone()).with_reads(
            object_cache,
            reading_blobs,
            Some(frame_cache),
        ));
        let memories = Arc::new(
            memories
                .with_summaries(config.summary_chars, queue)
                .with_new_objects(search.waker()),
        );
        let summarizer = summarizer.map(|s| s.spawn(memories.clone()));
        let indexer = config.search_index.then(|| search.spawn_indexer());
        // Taken now, not when the task first runs: a put this process
        // answers meanwhile settles on its own, and must not be swept too.
        let put_before = crate::domain::now_ms();
        let settler = tokio::spawn({
            let (memories, ledger) = (memories.clone(), ledger.clone());
            async move {
                crate::domain::memories::put::settle_left_over(&memories, &ledger, put_before).await
            }
        });
        let maintenance = Arc::new(Maintenance::new(
            memories.clone(),
            meta.clone(),
            blobs.clone(),
            Duration::from_secs(config.gc_grace_secs),
        ));
        let sweeper = maintenance.spawn_sweeper(RetentionPolicy {
            rule: RetentionRule {
                keep_days: config.retention_keep_days,
                keep_entries: config.retention_keep_entries,
                max_bytes: config.retention_max_bytes,
            },
            interval: Duration::from_secs(config.retention_interval_secs),
        });
        let proxy = Arc::new(proxy_of(config)?);
        let exchanges = Arc::new(
            ExchangeLedger::new(
                ledger.clone(),
                meta.clone(),
                (config.exchanges_keep_days > 0).then(|| {
                    Duration::from_secs(config.exchanges_keep_days.saturating_mul(86_400))
                }),
            )
            .with_thread_cache(config.exchanges_cache_bytes)
            .with_redaction(config.redact)
            .enabled(config.exchanges),
        );
        let limits = Arc::new(crate::http::limits::Limits::new(
            config.limit_rate,
            config.limit_burst,
            config.limit_concurrent,
            metrics.clone(),
        ));
        let state = AppState {
            proxy,
            exchanges,
            limits,
            cache,
            metrics,
            maintenance,
            compressor: Arc::new(Compressor::new(memories.clone())),
            governor: Arc::new(governor),
            memories,
            ledger,
            meta,
            blobs,
            auth: Arc::new(auth),
            config: Arc::new(HttpConfig {
                max_json_bytes: config.max_json_bytes,
            }),
            search,
            jq: Arc::new(jq_limits(config)),
        };
        warm_up
            .await
            .context("warming up the token, redaction and summary tables")?;
        Ok(Self {
            state,
            access,
            flusher,
            ledger_flusher,
            sweeper,
            summarizer,
            indexer,
            settler,
        })
    }

    /// The router over this application's state.
    pub fn router(&self) -> axum::Router {
        http::router(self.state.clone())
    }

    /// Writes pending read statistics and closes the stores.
    pub async fn shutdown(self) {
        self.flusher.abort();
        if let Some(indexer) = &self.indexer {
            indexer.abort();
        }
        self.sweeper.abort();
        self.settler.abort();
        if let Some(summarizer) = &self.summarizer {
            summarizer.abort();
        }
        self.access.flush(self.state.meta.as_ref()).await;
        self.ledger_flusher.abort();
        if let Err(e) = self.state.ledger.flush().await {
            tracing::error!(error = %e, "could not write accounting at shutdown");
        }
        self.state.meta.close().await;
    }
}

/// Where in the data directory a PostgreSQL store's replica keeps its
/// full-text index.
const PG_FULLTEXT_DIR: &str = "fulltext";

/// Opens the metadata store at `url`; a PostgreSQL store keeps this
/// replica's full-text index in `data_dir` (SQLite's lives beside its file).
async fn open_meta(url: &str, data_dir: &Path) -> anyhow::Result<Arc<dyn MetaStore>> {
    if url.starts_with("sqlite:") {
        let store = SqliteMetaStore::open(url)
            .await
            .with_context(|| format!("cannot open metadata store {url}"))?;
        return Ok(Arc::new(store));
    }
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        let store = PgMetaStore::open(url, Some(&data_dir.join(PG_FULLTEXT_DIR)))
            .await
            .with_context(|| format!("cannot open metadata store {}", redacted(url)))?;
        return Ok(Arc::new(store));
    }
    bail!(
        "unsupported metadata store URL `{}`: this build supports sqlite://, postgres:// and postgresql://",
        redacted(url)
    )
}

/// A database URL fit for a log or an error: without its password.
fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

/// The LLM proxy's upstreams (a provider without a URL answers 404).
fn proxy_of(config: &Config) -> anyhow::Result<http::proxy::Proxy> {
    let upstream = |url: &Option<String>, key: &Option<crate::config::Secret>| {
        url.as_ref()
            .filter(|u| !u.is_empty())
            .map(|u| http::proxy::Upstream {
                base_url: u.clone(),
                key: key.clone().filter(|k| !k.expose().is_empty()),
            })
    };
    http::proxy::Proxy::new(
        upstream(&config.upstream_openai_url, &config.upstream_openai_key),
        upstream(
            &config.upstream_anthropic_url,
            &config.upstream_anthropic_key,
        ),
        crate::domain::proxying::rewrite::RewriteSettings {
            offload_chars: config.proxy_offload_chars,
            preserve_prefix: config.proxy_preserve_prefix,
            tools_for_agents: config.proxy_tools == "agents",
        },
        config.proxy_max_rounds,
        Duration::from_secs(config.proxy_timeout_secs),
        Duration::from_secs(config.proxy_idle_secs),
    )
}

/// The shared hot cache, when `CAIRN_REDIS_URL` is set.
fn open_cache(config: &Config, metrics: &Arc<Metrics>) -> anyhow::Result<Option<Arc<RedisCache>>> {
    let Some(url) = config.redis_url.as_deref().filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let settings = RedisSettings {
        url: url.to_owned(),
        prefix: config.redis_prefix.clone(),
        ttl: Duration::from_secs(config.redis_ttl_secs),
        max_bytes: config.redis_max_bytes,
        timeout: Duration::from_millis(config.redis_timeout_ms),
    };
    Ok(Some(Arc::new(RedisCache::open(settings, metrics.clone())?)))
}

fn open_blobs(config: &Config) -> anyhow::Result<Arc<dyn BlobStore>> {
    if let Some(url) = config
        .blob_url
        .as_deref()
        .filter(|u| u.starts_with("s3://"))
    {
        let location = S3Url::parse(url).map_err(anyhow::Error::msg)?;
        // Uploads are spooled to the data directory's tmp/ (see storage::blob::s3).
        let (store, removed) = S3BlobStore::open(&location, config.data_dir.join("tmp"))
            .with_context(|| format!("cannot open the S3 blob store s3://{}", location.bucket))?;
        if removed > 0 {
            tracing::info!(removed, "removed leftover temp files from an earlier run");
        }
        return Ok(Arc::new(store));
    }
    let (root, tmp) = match config.blob_url.as_deref() {
        None => (config.data_dir.join("blobs"), config.data_dir.join("tmp")),
        Some(url) => match url.strip_prefix("file://") {
            // Temp files must be on the objects' file system so that linking them in is atomic.
            Some(path) => (PathBuf::from(path), PathBuf::from(path).join(".tmp")),
            None => {
                bail!("unsupported blob store URL `{url}`: this build supports file:// and s3://")
            }
        },
    };
    let (store, removed) = FsBlobStore::open(root.clone(), tmp)
        .with_context(|| format!("cannot open blob store at {}", root.display()))?;
    if removed > 0 {
        tracing::info!(removed, "removed leftover temp files from an earlier run");
    }
    Ok(Arc::new(store))
}

/// Runs the service until SIGINT or SIGTERM.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let app = App::build(&config).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let local = listener.local_addr()?;
    if !app.state.auth.enabled() {
        tracing::warn!("no API keys configured: every caller shares the `default` namespace");
    }
    tracing::info!(address = %local, data_dir = %config.data_dir.display(), "cairn listening");
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    let signalled = Arc::new(tokio::sync::Notify::new());
    let stop = {
        let signalled = signalled.clone();
        async move {
            shutdown_signal().await;
            tracing::info!(
                grace_secs = grace.as_secs(),
                "shutting down: no new connections; requests under way may finish"
            );
            signalled.notify_one();
        }
    };
    // Graceful shutdown waits for every open request, a stream too, however
    // long it runs: after the grace period what is left is cut.
    let grace_over = async {
        signalled.notified().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        served = http::serve(listener, app.router(), stop) => served?,
        () = grace_over => {
            tracing::warn!(grace_secs = grace.as_secs(), "grace period over: cutting the requests still open");
        }
    }
    tracing::info!("closing the stores");
    tokio::time::timeout(CLOSE_STORES_WITHIN, app.shutdown())
        .await
        .ok();
    Ok(())
}

/// Longest Cairn waits at shutdown for its stores to write what they hold
/// (read statistics, the ledger, the index) and close.
const CLOSE_STORES_WITHIN: Duration = Duration::from_secs(30);

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// The bounds of jq queries: the worker is this program unless configured.
fn jq_limits(config: &Config) -> crate::domain::memories::jq::JqLimits {
    crate::domain::memories::jq::JqLimits {
        max_input_bytes: config.query_max_bytes,
        max_output_bytes: usize::try_from(config.max_slice_bytes).unwrap_or(usize::MAX),
        max_results: 1000,
        timeout: std::time::Duration::from_millis(config.query_timeout_ms.max(1)),
        memory_bytes: config.query_memory_bytes,
        worker: config
            .jq_worker
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "cairn".into()),
        workers: Arc::new(tokio::sync::Semaphore::new(
            std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
        )),
    }
}
