//! The `cairn` client subcommands: a thin client of a running server.
//!
//! Exit codes: 0 ok, 1 the server answered with an error, 2 usage error,
//! 3 the server could not be reached. Errors go to stderr as
//! `error: <code>: <message>`; `--json` prints the server's JSON as is.

use clap::{Args, Subcommand};
use serde_json::Value;

mod admin;
mod archive;
mod grep;
mod put;
mod query;
mod read;

/// Where the server is and how to talk to it (every client subcommand takes these).
#[derive(Args, Clone, Debug)]
pub struct Conn {
    /// Base URL of the Cairn server.
    #[arg(long, env = "CAIRN_URL", default_value = "http://127.0.0.1:8077")]
    pub url: String,
    /// API key (sent as `Authorization: Bearer`).
    #[arg(long, env = "CAIRN_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Print the server's JSON instead of human output.
    #[arg(long)]
    pub json: bool,
}

/// Client subcommands.
#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Store content from stdin or a file; prints the pointer and summary.
    Put(put::PutArgs),
    /// Fetch a memory's content, a slice of it, or its summary.
    Fetch(read::FetchArgs),
    /// The lines of a memory that match a pattern, like `grep -n`.
    Grep(grep::GrepArgs),
    /// A jq program over a JSON memory; prints its outputs like `jq -c`.
    Query(query::QueryArgs),
    /// List memories, newest first.
    List(read::ListArgs),
    /// Full-text search.
    Search(read::SearchArgs),
    /// Lightweight refs linked to a thread, checkpoint or directory.
    Refs(read::RefsArgs),
    /// Totals of the namespace.
    Stats(ConnOnly),
    /// Remove memories by age, count or size (admin).
    Prune(admin::PruneArgs),
    /// Remove objects no memory refers to (admin).
    Gc(ConnOnly),
    /// Check every object and the metadata (admin).
    Verify(admin::VerifyArgs),
    /// Write the namespace as one tar archive.
    Export(archive::ExportArgs),
    /// Restore an archive made by `export`.
    Import(archive::ImportArgs),
}

/// A subcommand with no arguments but the connection.
#[derive(Args, Debug)]
pub struct ConnOnly {
    #[command(flatten)]
    conn: Conn,
}

/// How a client command failed.
#[derive(Debug)]
pub enum CliError {
    /// The server answered with an error.
    Server {
        /// The error code.
        code: String,
        /// The message.
        message: String,
    },
    /// Bad command line.
    Usage(String),
    /// The server could not be reached.
    Connect(String),
    /// Anything else (local I/O, a broken answer).
    Other(String),
}

impl CliError {
    fn exit_code(&self) -> u8 {
        match self {
            Self::Server { .. } | Self::Other(_) => 1,
            Self::Usage(_) => 2,
            Self::Connect(_) => 3,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Server { code, message } => write!(f, "{code}: {message}"),
            Self::Usage(m) => write!(f, "usage: {m}"),
            Self::Connect(m) => write!(f, "connect: {m}"),
            Self::Other(m) => write!(f, "io: {m}"),
        }
    }
}

impl From<reqwest::Error> for CliError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_connect() || e.is_timeout() {
            Self::Connect(format!("cannot reach the server: {e}"))
        } else if e.is_builder() {
            Self::Usage(e.to_string())
        } else {
            Self::Other(e.to_string())
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        Self::Other(e.to_string())
    }
}

/// Runs a client subcommand; returns the process exit code.
pub async fn run(command: ClientCommand) -> std::process::ExitCode {
    let result = match command {
        ClientCommand::Put(a) => put::run(a).await,
        ClientCommand::Fetch(a) => read::fetch(a).await,
        ClientCommand::Query(a) => query::query(a).await,
        ClientCommand::Grep(a) => grep::grep(a).await,
        ClientCommand::List(a) => read::list(a).await,
        ClientCommand::Search(a) => read::search(a).await,
        ClientCommand::Refs(a) => read::refs(a).await,
        ClientCommand::Stats(a) => read::stats(a.conn).await,
        ClientCommand::Prune(a) => admin::prune(a).await,
        ClientCommand::Gc(a) => admin::gc(a.conn).await,
        ClientCommand::Verify(a) => admin::verify(a).await,
        ClientCommand::Export(a) => archive::export(a).await,
        ClientCommand::Import(a) => archive::import(a).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
    }
}

/// An HTTP client bound to one server and key.
pub(crate) struct Client {
    http: reqwest::Client,
    conn: Conn,
}

impl Client {
    fn new(conn: Conn) -> Result<Self, CliError> {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| CliError::Other(e.to_string()))?;
        Ok(Self { http, conn })
    }

    fn json(&self) -> bool {
        self.conn.json
    }

    /// A request to `path` (starting with `/`), with the key if any.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.conn.url.trim_end_matches('/'));
        let request = self.http.request(method, url);
        match &self.conn.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// Sends and returns the response when it is a success, else the server's error.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, CliError> {
        let response = request.send().await?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let parsed: Option<Value> = serde_json::from_str(&body).ok();
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| v["error"][k].as_str())
                .map(str::to_owned)
        };
        Err(CliError::Server {
            code: field("code").unwrap_or_else(|| status.as_u16().to_string()),
            message: field("message").unwrap_or(body),
        })
    }

    /// Sends and parses the JSON answer.
    async fn send_json(&self, request: reqwest::RequestBuilder) -> Result<Value, CliError> {
        let response = self.send(request).await?;
        response
            .json()
            .await
            .map_err(|e| CliError::Other(format!("bad JSON from the server: {e}")))
    }

    /// Prints `value` as JSON (`--json`) or with `human`.
    fn print(&self, value: &Value, human: impl FnOnce(&Value)) {
        if self.json() {
            println!("{value}");
        } else {
            human(value);
        }
    }
}

/// Prints a JSON object as `key: value` lines, nested keys joined with dots.
pub(crate) fn print_flat(value: &Value) {
    fn walk(prefix: &str, value: &Value) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v);
                }
            }
            Value::String(s) => println!("{prefix}: {s}"),
            other => println!("{prefix}: {other}"),
        }
    }
    walk("", value);
}

/// Splits `A:B` into two numbers.
pub(crate) fn pair(text: &str, what: &str) -> Result<(u64, u64), CliError> {
    let bad = || {
        CliError::Usage(format!(
            "{what} must look like A:B (e.g. 100:200), not `{text}`"
        ))
    };
    let (a, b) = text.split_once(':').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}
