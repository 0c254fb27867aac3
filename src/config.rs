//! Configuration: `cairn serve` flags, each with its `CAIRN_*` variable (a flag wins).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The `cairn` command line.
#[derive(Parser, Debug)]
#[command(
    name = "cairn",
    version,
    about = "A memory store for LLM agents",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Server settings when no subcommand is given.
    #[command(flatten)]
    pub serve: Config,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTP service.
    Serve(Box<Config>),
    /// Print the OpenAPI document (as committed in openapi/openapi.json).
    Openapi,
    /// Evaluate a jq program over stdin under rlimits (the server runs it).
    #[command(hide = true)]
    JqWorker(crate::jq::WorkerArgs),
    /// Client subcommands (put, fetch, list, ...) against a running server.
    #[command(flatten)]
    Client(Box<crate::cli::ClientCommand>),
}

/// Everything `cairn serve` can be told.
#[derive(Args, Clone, Debug)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "CAIRN_LISTEN", default_value = "127.0.0.1:8077")]
    pub listen: SocketAddr,
    /// Directory for the metadata database, objects and temp files.
    #[arg(long, env = "CAIRN_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Metadata store URL (default: sqlite://<data-dir>/meta.sqlite).
    #[arg(long, env = "CAIRN_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Blob store URL (default: file://<data-dir>/blobs), or `s3://bucket/prefix`
    /// (endpoint, region and credentials from the AWS_* variables).
    #[arg(long, env = "CAIRN_BLOB_URL", hide_env_values = true)]
    pub blob_url: Option<String>,
    /// API keys: `key:namespace[:admin],...`. Without keys, one open `default` namespace.
    #[arg(long, env = "CAIRN_API_KEYS", hide_env_values = true)]
    pub api_keys: Option<String>,
    /// Allow binding a non-loopback address without API keys.
    #[arg(long, env = "CAIRN_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,
    /// zstd level of stored frames (1-19).
    #[arg(long, env = "CAIRN_ZSTD_LEVEL", default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=19))]
    pub zstd_level: i32,
    /// Content bytes per zstd frame. 512 KiB: measured here, 0.9% larger than
    /// 1 MiB frames but half the decoding per slice.
    #[arg(long, env = "CAIRN_FRAME_BYTES", default_value_t = 512 << 10)]
    pub frame_bytes: usize,
    /// Content up to this size is stored uncompressed in the metadata store.
    #[arg(long, env = "CAIRN_INLINE_MAX_BYTES", default_value_t = 2048)]
    pub inline_max_bytes: usize,
    /// Compressed objects up to this size are stored in the metadata store.
    #[arg(long, env = "CAIRN_INLINE_OBJECT_MAX_BYTES", default_value_t = 64 << 10)]
    pub inline_object_max_bytes: usize,
    /// Most lines in one line slice.
    #[arg(long, env = "CAIRN_MAX_SLICE_LINES", default_value_t = 2000)]
    pub max_slice_lines: u64,
    /// Most bytes in one slice.
    #[arg(long, env = "CAIRN_MAX_SLICE_BYTES", default_value_t = 64 << 10)]
    pub max_slice_bytes: u64,
    /// Lines served when a line slice names no end.
    #[arg(long, env = "CAIRN_DEFAULT_SLICE_LINES", default_value_t = 200)]
    pub default_slice_lines: u64,
    /// Target chunk size for `/chunks/{n}`.
    #[arg(long, env = "CAIRN_CHUNK_BYTES", default_value_t = 32 << 10)]
    pub chunk_bytes: u64,
    /// Content bytes one grep reads before it answers with `next` (about
    /// 0.1 s of scanning here): grep over a huge memory is paged.
    #[arg(long, env = "CAIRN_GREP_SCAN_BYTES", default_value_t = 64 << 20)]
    pub grep_scan_bytes: u64,
    /// Largest memory a jq query reads (it is parsed whole): larger ones are
    /// a 422 that points to grep and slices.
    #[arg(long, env = "CAIRN_QUERY_MAX_BYTES", default_value_t = 64 << 20)]
    pub query_max_bytes: u64,
    /// Wall-clock time one jq query may run before its worker is killed.
    #[arg(long, env = "CAIRN_QUERY_TIMEOUT_MS", default_value_t = 5000)]
    pub query_timeout_ms: u64,
    /// Address space of one jq worker process.
    #[arg(long, env = "CAIRN_QUERY_MEMORY_BYTES", default_value_t = 2 << 30)]
    pub query_memory_bytes: u64,
    /// The binary run as the jq worker (default: this program).
    #[arg(long, env = "CAIRN_JQ_WORKER", hide = true)]
    pub jq_worker: Option<PathBuf>,
    /// Largest accepted upload in bytes (default: no limit but the disk).
    #[arg(long, env = "CAIRN_MAX_UPLOAD_BYTES")]
    pub max_upload_bytes: Option<u64>,
    /// Content up to this size gets an exact o200k_base token count at put
    /// (~7 ms of CPU a megabyte here, spread over the cores as the upload
    /// arrives); larger content gets the bytes/4 estimate.
    #[arg(long, env = "CAIRN_EXACT_TOKENS_MAX_BYTES", default_value_t = 1 << 20)]
    pub exact_tokens_max_bytes: u64,
    /// A client's put (REST, MCP, the CLI) of content over this size answers
    /// as soon as the content is durable, with the bytes/4 estimate and
    /// `tokens_settling: true`; its exact count, made after the answer below
    /// the requests' priority, replaces it moments later. Smaller content,
    /// and the pieces compress and the proxy store, are counted before the
    /// answer.
    #[arg(long, env = "CAIRN_EXACT_TOKENS_AFTER_BYTES", default_value_t = 128 << 10)]
    pub exact_tokens_after_bytes: u64,
    /// Largest JSON request body in bytes.
    #[arg(long, env = "CAIRN_MAX_JSON_BYTES", default_value_t = 64 << 20)]
    pub max_json_bytes: usize,
    /// JSON file of model prices (USD per million tokens) that overrides and extends
    /// the built-in table: `{"model-prefix": {"input_per_mtok": 2.5, "output_per_mtok": 10}}`.
    #[arg(long, env = "CAIRN_PRICING_FILE")]
    pub pricing_file: Option<PathBuf>,
    /// Model whose price applies when none is named (or the named one is unknown).
    #[arg(long, env = "CAIRN_DEFAULT_MODEL", default_value = "gpt-4o")]
    pub default_model: String,
    /// Daily token budget of every namespace (input + output tokens reported to /v1/usage).
    #[arg(long, env = "CAIRN_DAILY_TOKEN_BUDGET")]
    pub daily_token_budget: Option<u64>,
    /// Daily cost budget of every namespace, USD.
    #[arg(long, env = "CAIRN_DAILY_COST_BUDGET_USD")]
    pub daily_cost_budget_usd: Option<f64>,
    /// Per-namespace budgets: `ns1:tokens=5000000,ns2:cost=12.5,ns3:tokens=off:cost=2`.
    #[arg(long, env = "CAIRN_BUDGETS")]
    pub budgets: Option<String>,
    /// Cap on deterministic summaries, in characters.
    #[arg(long, env = "CAIRN_SUMMARY_CHARS", default_value_t = 800)]
    pub summary_chars: usize,
    /// OpenAI-compatible base URL for LLM summaries (POST {url}/chat/completions); unset: none.
    #[arg(long, env = "CAIRN_SUMMARIZER_URL")]
    pub summarizer_url: Option<String>,
    /// Model asked for LLM summaries.
    #[arg(long, env = "CAIRN_SUMMARIZER_MODEL", default_value = "gpt-4o-mini")]
    pub summarizer_model: String,
    /// Bearer key for the summarizer endpoint (never logged).
    #[arg(long, env = "CAIRN_SUMMARIZER_API_KEY", hide_env_values = true)]
    pub summarizer_api_key: Option<Secret>,
    /// Content smaller than this gets no LLM summary.
    #[arg(long, env = "CAIRN_SUMMARIZER_MIN_BYTES", default_value_t = 8 << 10)]
    pub summarizer_min_bytes: u64,
    /// Seconds allowed for one LLM summary.
    #[arg(long, env = "CAIRN_SUMMARIZER_TIMEOUT_SECS", default_value_t = 60)]
    pub summarizer_timeout_secs: u64,
    /// Memories waiting for an LLM summary at most; beyond, they are skipped.
    #[arg(long, env = "CAIRN_SUMMARIZER_QUEUE", default_value_t = 256)]
    pub summarizer_queue: usize,
    /// Replace secrets (private keys, API tokens, JWTs, passwords) in content
    /// before it is stored or summarized (`false` stores content as sent).
    #[arg(long, env = "CAIRN_REDACT", default_value_t = true, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub redact: bool,
    /// Governor: `warn` tier from this many context tokens.
    #[arg(long, env = "CAIRN_GOVERNOR_WARN_TOKENS", default_value_t = 20_000)]
    pub governor_warn_tokens: u64,
    /// Governor: `pointer_only` tier from this many context tokens.
    #[arg(
        long,
        env = "CAIRN_GOVERNOR_POINTER_ONLY_TOKENS",
        default_value_t = 40_000
    )]
    pub governor_pointer_only_tokens: u64,
    /// Governor limits per model and namespace: a JSON file
    /// `{"models": {"gpt-4.1": {"warn": .., "pointer_only": ..}}, "namespaces": {..}}`.
    #[arg(long, env = "CAIRN_GOVERNOR_FILE")]
    pub governor_file: Option<PathBuf>,
    /// Index new content for full-text search in the background (`false`:
    /// the queue is kept, searched content stays as indexed so far).
    #[arg(long, env = "CAIRN_SEARCH_INDEX", default_value_t = true, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub search_index: bool,
    /// Background retention: remove memories older than this many days, in every namespace.
    #[arg(long, env = "CAIRN_RETENTION_KEEP_DAYS")]
    pub retention_keep_days: Option<u64>,
    /// Background retention: keep at most this many content bytes per namespace (oldest go first).
    #[arg(long, env = "CAIRN_RETENTION_MAX_BYTES")]
    pub retention_max_bytes: Option<u64>,
    /// Background retention: keep at most this many memories per namespace (oldest go first).
    #[arg(long, env = "CAIRN_RETENTION_KEEP_ENTRIES")]
    pub retention_keep_entries: Option<u64>,
    /// Requests a second each namespace may make (REST, MCP and the proxy
    /// together; 0: no rate limit). Over it: 429 with `Retry-After`.
    #[arg(long, env = "CAIRN_LIMIT_RATE", default_value_t = 0)]
    pub limit_rate: u32,
    /// Requests a namespace may make at once above its rate (0: the rate).
    #[arg(long, env = "CAIRN_LIMIT_BURST", default_value_t = 0)]
    pub limit_burst: u32,
    /// Requests each namespace may have in flight at once (a proxied stream
    /// counts until it ends; 0: no limit). Over it: 429 with `Retry-After`.
    #[arg(long, env = "CAIRN_LIMIT_CONCURRENT", default_value_t = 0)]
    pub limit_concurrent: u32,
    /// Record every proxied exchange in the exchange ledger (`false`: none is
    /// recorded, and no request body is kept).
    #[arg(long, env = "CAIRN_EXCHANGES", default_value_t = true, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub exchanges: bool,
    /// Days the exchange ledger keeps a proxied conversation after its last
    /// request (0: for ever).
    #[arg(long, env = "CAIRN_EXCHANGES_KEEP_DAYS", default_value_t = 30)]
    pub exchanges_keep_days: u64,
    /// Seconds between background retention rounds (expired memories go at each round too).
    #[arg(long, env = "CAIRN_RETENTION_INTERVAL_SECS", default_value_t = 60)]
    pub retention_interval_secs: u64,
    /// Seconds an object stays unreferenced before GC may remove it.
    #[arg(long, env = "CAIRN_GC_GRACE_SECS", default_value_t = 3600)]
    pub gc_grace_secs: u64,
    /// Decoded frames kept in this process for slices, in bytes (0: off).
    #[arg(long, env = "CAIRN_FRAME_CACHE_BYTES", default_value_t = 8 << 20)]
    pub frame_cache_bytes: u64,
    /// Object records (frame indexes, small contents kept inline) held in
    /// this process, in bytes, so that paging through a memory reads its
    /// record once.
    #[arg(long, env = "CAIRN_OBJECT_CACHE_BYTES", default_value_t = 4 << 20)]
    pub object_cache_bytes: u64,
    /// Proxy: the request bodies the exchange ledger keeps in memory, in
    /// bytes, so that a thread's next request is stored as what it appended.
    #[arg(long, env = "CAIRN_EXCHANGES_CACHE_BYTES", default_value_t = crate::domain::proxying::exchanges::THREAD_BYTES)]
    pub exchanges_cache_bytes: u64,
    /// Redis or Dragonfly shared by replicas as a hot cache of stored frames
    /// and object records (`redis://host:6379/0`; default: none).
    #[arg(long, env = "CAIRN_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// Lifetime of a shared-cache entry, in seconds.
    #[arg(long, env = "CAIRN_REDIS_TTL_SECS", default_value_t = 3600)]
    pub redis_ttl_secs: u64,
    /// Bytes the shared cache may take in one TTL window (live entries stay below twice this).
    #[arg(long, env = "CAIRN_REDIS_MAX_BYTES", default_value_t = 1 << 30)]
    pub redis_max_bytes: u64,
    /// Deadline of each shared-cache call in milliseconds; past it the stores answer.
    #[arg(long, env = "CAIRN_REDIS_TIMEOUT_MS", default_value_t = 50)]
    pub redis_timeout_ms: u64,
    /// Prefix of the shared cache's keys: one per deployment. Only replicas of
    /// the same metadata and object stores should share it (reads use cached
    /// object records).
    #[arg(long, env = "CAIRN_REDIS_PREFIX", default_value = "cairn")]
    pub redis_prefix: String,
    /// OpenAI-compatible upstream of the proxy routes (`/v1/chat/completions`,
    /// `/v1/responses`, `/v1/models`), e.g. `https://api.openai.com/v1`; unset: those routes answer 404.
    #[arg(long, env = "CAIRN_UPSTREAM_OPENAI_URL")]
    pub upstream_openai_url: Option<String>,
    /// Anthropic upstream of the proxy routes (`/v1/messages`,
    /// `/v1/messages/count_tokens`), e.g. `https://api.anthropic.com`; unset: those routes answer 404.
    #[arg(long, env = "CAIRN_UPSTREAM_ANTHROPIC_URL")]
    pub upstream_anthropic_url: Option<String>,
    /// Provider key Cairn adds to OpenAI upstream requests (sidecar-held; callers then
    /// authenticate with their Cairn key). Never logged.
    #[arg(long, env = "CAIRN_UPSTREAM_OPENAI_KEY", hide_env_values = true)]
    pub upstream_openai_key: Option<Secret>,
    /// Provider key Cairn adds to Anthropic upstream requests (sidecar-held). Never logged.
    #[arg(long, env = "CAIRN_UPSTREAM_ANTHROPIC_KEY", hide_env_values = true)]
    pub upstream_anthropic_key: Option<Secret>,
    /// Proxy: tool results and user texts longer than this (characters) are offloaded.
    #[arg(long, env = "CAIRN_PROXY_OFFLOAD_CHARS", default_value_t = 6000)]
    pub proxy_offload_chars: usize,
    /// Proxy: when Cairn's tools join a request: `pointer` (once the
    /// conversation holds a pointer: a conversation with nothing offloaded
    /// goes up as the client sent it) or `agents` (from an agent's first
    /// request on: the first offload then leaves the cached prefix alone,
    /// at the price of the tools' tokens on every request).
    #[arg(long, env = "CAIRN_PROXY_TOOLS", default_value = "pointer", value_parser = ["pointer", "agents"])]
    pub proxy_tools: String,
    /// Proxy: leading messages the governor's compression never edits (besides
    /// everything up to the last Anthropic `cache_control`).
    #[arg(long, env = "CAIRN_PROXY_PRESERVE_PREFIX", default_value_t = 0)]
    pub proxy_preserve_prefix: usize,
    /// Proxy: upstream rounds Cairn resolves its own tool calls in before it returns the last answer.
    #[arg(long, env = "CAIRN_PROXY_MAX_ROUNDS", default_value_t = 8)]
    pub proxy_max_rounds: usize,
    /// Proxy: seconds an upstream call may take before the client gets a 504.
    #[arg(long, env = "CAIRN_PROXY_TIMEOUT_SECS", default_value_t = 600)]
    pub proxy_timeout_secs: u64,
    /// Proxy: seconds a streamed answer may send nothing before Cairn ends
    /// the client's stream with an error (a stalled upstream).
    #[arg(long, env = "CAIRN_PROXY_IDLE_SECS", default_value_t = 300)]
    pub proxy_idle_secs: u64,
    /// Seconds requests under way (streams included) may take to finish after
    /// SIGTERM or Ctrl-C; what is still open then is cut and Cairn exits.
    #[arg(long, env = "CAIRN_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
    /// Log format: `text` or `json`.
    #[arg(long, env = "CAIRN_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl Config {
    /// Defaults (as if no flag and no variable were given) over a data directory.
    pub fn with_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        let mut config = Cli::parse_from(["cairn"]).serve;
        config.data_dir = data_dir.into();
        config
    }

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), String> {
        if !(64..=(16 << 20)).contains(&self.frame_bytes) {
            return Err("frame bytes must be between 64 and 16 MiB".into());
        }
        if self.summary_chars < 120 {
            return Err(
                "summary chars must be at least 120 (the header with the pointer takes about 110)"
                    .into(),
            );
        }
        if self
            .summarizer_url
            .as_deref()
            .is_some_and(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            return Err("the summarizer URL must start with http:// or https://".into());
        }
        if self.max_slice_lines == 0 || self.default_slice_lines == 0 {
            return Err("slice line limits must be at least 1".into());
        }
        if self.retention_interval_secs == 0 {
            return Err("the retention interval must be at least 1 second".into());
        }
        if self.redis_ttl_secs == 0 || self.redis_timeout_ms == 0 {
            return Err("the Redis TTL and timeout must be at least 1".into());
        }
        for (name, url) in [
            ("CAIRN_UPSTREAM_OPENAI_URL", &self.upstream_openai_url),
            ("CAIRN_UPSTREAM_ANTHROPIC_URL", &self.upstream_anthropic_url),
        ] {
            // Empty (as compose files pass an unset variable) means off.
            if url.as_deref().is_some_and(|u| {
                !(u.is_empty() || u.starts_with("http://") || u.starts_with("https://"))
            }) {
                return Err(format!("{name} must start with http:// or https://"));
            }
        }
        if self.proxy_offload_chars == 0
            || self.proxy_max_rounds == 0
            || self.proxy_timeout_secs == 0
            || self.proxy_idle_secs == 0
        {
            return Err(
                "proxy offload chars, max rounds, timeout and idle seconds must be at least 1"
                    .into(),
            );
        }
        if self.max_slice_bytes < 16 {
            return Err("max slice bytes must be at least 16".into());
        }
        if self.chunk_bytes == 0
            || self.chunk_bytes + (self.chunk_bytes / 4).min(8192) > self.max_slice_bytes
        {
            return Err("chunk bytes (plus a quarter, at most 8 KiB, for line alignment) must fit in max slice bytes".into());
        }
        if !self.listen.ip().is_loopback()
            && self.api_keys.as_deref().is_none_or(str::is_empty)
            && !self.insecure_no_auth
        {
            return Err(format!(
                "refusing to listen on {} without API keys: set CAIRN_API_KEYS (key:namespace,...) or pass --insecure-no-auth",
                self.listen
            ));
        }
        Ok(())
    }

    /// The governor limits in force (global, and the governor file's if given).
    pub fn governor(&self) -> Result<crate::domain::governor::GovernorConfig, String> {
        use crate::domain::governor::{GovernorConfig, Limits};
        let global = Limits {
            warn: self.governor_warn_tokens,
            pointer_only: self.governor_pointer_only_tokens,
        };
        match &self.governor_file {
            Some(path) => GovernorConfig::with_file(global, path),
            None => GovernorConfig::new(global),
        }
    }

    /// The metadata store URL in force.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("meta.sqlite").display()))
    }
}

/// A secret setting (a provider key) whose `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.to_owned()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}
