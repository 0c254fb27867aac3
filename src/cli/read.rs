//! `fetch`, `list`, `search`, `refs`, `stats`.

use clap::Args;
use futures::StreamExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::{CliError, Client, Conn, pair, print_flat};
use crate::model::MemoryFilter;

/// `cairn fetch`.
#[derive(Args, Debug)]
pub struct FetchArgs {
    #[command(flatten)]
    conn: Conn,
    /// A memory id (or unique prefix of 12+ characters) or a `mem://` URI.
    target: String,
    /// Lines START:END (1-based, inclusive).
    #[arg(long, conflicts_with_all = ["bytes", "chunk", "summary_only"])]
    lines: Option<String>,
    /// Bytes OFFSET:LENGTH.
    #[arg(long, conflicts_with_all = ["chunk", "summary_only"])]
    bytes: Option<String>,
    /// Chunk number N.
    #[arg(long, conflicts_with = "summary_only")]
    chunk: Option<u64>,
    /// Only the metadata and summary.
    #[arg(long)]
    summary_only: bool,
    /// The longest run of whole lines (from the start, or from --lines'
    /// START up to END) that fits N tokens; `more:` continues after it.
    #[arg(long, value_name = "N", conflicts_with_all = ["bytes", "chunk", "summary_only"])]
    max_tokens: Option<u64>,
    /// Count tokens with this model's encoding (default o200k_base).
    #[arg(long, requires = "max_tokens")]
    model: Option<String>,
}

/// The filter and page size `list` and `search` share.
#[derive(Args, Debug)]
pub struct Filters {
    #[command(flatten)]
    filter: MemoryFilter,
    /// Most results.
    #[arg(long)]
    limit: Option<u32>,
}

impl Filters {
    /// The query-string pairs: the filter's wire names, then `limit`.
    fn query(&self) -> Vec<(String, String)> {
        let mut pairs = self.filter.pairs();
        if let Some(limit) = self.limit {
            pairs.push(("limit".to_owned(), limit.to_string()));
        }
        pairs
    }
}

/// `cairn list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    conn: Conn,
    #[command(flatten)]
    filters: Filters,
    /// Continue from a `next_cursor`.
    #[arg(long)]
    cursor: Option<String>,
}

/// `cairn search`.
#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    conn: Conn,
    /// The query (words, "a phrase", prefix*).
    query: String,
    #[command(flatten)]
    filters: Filters,
}

/// `cairn refs`.
#[derive(Args, Debug)]
pub struct RefsArgs {
    #[command(flatten)]
    conn: Conn,
    /// Refs of this thread.
    #[arg(long)]
    thread: Option<String>,
    /// Refs of this checkpoint.
    #[arg(long)]
    checkpoint: Option<String>,
    /// Refs of this directory.
    #[arg(long)]
    directory: Option<String>,
}

fn short(id: &Value) -> String {
    id.as_str().unwrap_or_default().chars().take(12).collect()
}

/// Prints a slice answer: its text on stdout, where to go next on stderr.
fn print_slice(v: &Value) {
    let text = v["text"].as_str().unwrap_or_default();
    print!("{text}");
    if !text.is_empty() && !text.ends_with('\n') {
        println!();
    }
    if let Some(next) = v["next"].as_str() {
        eprintln!("more: {next}");
    }
}

/// The pointer a `--max-tokens` fetch starts from: the target as given (a
/// URI keeps its own start), or the id's, from --lines' START up to END.
fn budgeted_uri(target: &str, lines: Option<&str>) -> Result<String, CliError> {
    let uri = match target.strip_prefix("mem://") {
        Some(_) => target.to_owned(),
        None => format!("mem://{target}"),
    };
    match lines {
        None => Ok(uri),
        Some(_) if uri.contains(['#', '?']) => Err(CliError::Usage(format!(
            "`{target}` names its own start: drop --lines, or pass mem://<id> or the id"
        ))),
        Some(lines) => {
            let (start, end) = pair(lines, "--lines")?;
            Ok(format!("{uri}#L{start}-{end}"))
        }
    }
}

/// Runs `fetch`.
pub async fn fetch(a: FetchArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let get = reqwest::Method::GET;
    if let Some(max_tokens) = a.max_tokens {
        let uri = budgeted_uri(&a.target, a.lines.as_deref())?;
        let mut query = vec![("uri", uri), ("max_tokens", max_tokens.to_string())];
        query.extend(a.model.map(|model| ("model", model)));
        let request = client.request(get, "/v1/fetch").query(&query);
        let answer = client.send_json(request).await?;
        client.print(&answer, |v| {
            print_slice(v);
            eprintln!(
                "tokens: {} ({})",
                v["tokens"].as_u64().unwrap_or_default(),
                v["method"].as_str().unwrap_or_default()
            );
        });
        return Ok(());
    }
    let flagged = a.lines.is_some() || a.bytes.is_some() || a.chunk.is_some() || a.summary_only;
    let id = match a.target.strip_prefix("mem://") {
        // A URI that names its range is fetched as it is; one flag more is ambiguous.
        Some(rest) if rest.contains(['#', '?']) => {
            if flagged {
                return Err(CliError::Usage(format!(
                    "`{}` names its own range: drop --lines/--bytes/--chunk/--summary-only, or pass mem://<id> or the id",
                    a.target
                )));
            }
            let request = client
                .request(get, "/v1/fetch")
                .query(&[("uri", &a.target)]);
            let answer = client.send_json(request).await?;
            client.print(&answer, print_slice);
            return Ok(());
        }
        Some(id) if !flagged => {
            // A bare pointer: its first slice, as `/v1/fetch` answers it.
            let request = client
                .request(get, "/v1/fetch")
                .query(&[("uri", &format!("mem://{id}"))]);
            let answer = client.send_json(request).await?;
            client.print(&answer, print_slice);
            return Ok(());
        }
        Some(id) => id,
        None => a.target.as_str(),
    };
    if !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CliError::Usage(format!(
            "`{id}` is neither an id nor a mem:// URI"
        )));
    }
    let request = if let Some(lines) = &a.lines {
        let (start, end) = pair(lines, "--lines")?;
        client
            .request(get, &format!("/v1/memories/{id}/lines"))
            .query(&[("start", start), ("end", end)])
    } else if let Some(bytes) = &a.bytes {
        let (offset, length) = pair(bytes, "--bytes")?;
        client
            .request(get, &format!("/v1/memories/{id}/bytes"))
            .query(&[("offset", offset), ("length", length)])
    } else if let Some(n) = a.chunk {
        client.request(get, &format!("/v1/memories/{id}/chunks/{n}"))
    } else if a.summary_only {
        let answer = client
            .send_json(client.request(get, &format!("/v1/memories/{id}")))
            .await?;
        client.print(&answer, |v| {
            println!("{}", v["summary"].as_str().unwrap_or_default());
        });
        return Ok(());
    } else {
        // The whole content, streamed as it is.
        let response = client
            .send(client.request(get, &format!("/v1/memories/{id}/content")))
            .await?;
        let mut body = response.bytes_stream();
        let mut out = tokio::io::stdout();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| CliError::Other(format!("content broke off: {e}")))?;
            out.write_all(&chunk).await?;
        }
        out.flush().await?;
        return Ok(());
    };
    let answer = client.send_json(request).await?;
    client.print(&answer, print_slice);
    Ok(())
}

/// Runs `list`.
pub async fn list(a: ListArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let mut query = a.filters.query();
    if let Some(cursor) = a.cursor {
        query.push(("cursor".to_owned(), cursor));
    }
    let request = client
        .request(reqwest::Method::GET, "/v1/memories")
        .query(&query);
    let answer = client.send_json(request).await?;
    client.print(&answer, |v| {
        for m in v["memories"].as_array().into_iter().flatten() {
            println!(
                "{}  {:<12} {:>10} B {:>8} L  {}",
                short(&m["id"]),
                m["type"].as_str().unwrap_or_default(),
                m["bytes"],
                m["lines"],
                m["title"].as_str().unwrap_or_default()
            );
        }
        if let Some(next) = v["next_cursor"].as_str() {
            eprintln!("more: --cursor {next}");
        }
    });
    Ok(())
}

/// Runs `search`.
pub async fn search(a: SearchArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let mut query = a.filters.query();
    query.push(("q".to_owned(), a.query));
    let request = client
        .request(reqwest::Method::GET, "/v1/search")
        .query(&query);
    let answer = client.send_json(request).await?;
    client.print(&answer, |v| {
        let results = v["results"].as_array().or_else(|| v.as_array());
        for r in results.into_iter().flatten() {
            println!(
                "{}  {}  {}",
                short(&r["id"]),
                r["type"].as_str().unwrap_or_default(),
                r["title"].as_str().unwrap_or_default()
            );
            for hit in r["hits"].as_array().into_iter().flatten() {
                println!(
                    "  L{}: {}",
                    hit["line"],
                    hit["text"].as_str().unwrap_or_default()
                );
            }
        }
    });
    Ok(())
}

/// Runs `refs`.
pub async fn refs(a: RefsArgs) -> Result<(), CliError> {
    let query: Vec<(&str, String)> = [
        ("thread", a.thread),
        ("checkpoint", a.checkpoint),
        ("directory", a.directory),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    if query.is_empty() {
        return Err(CliError::Usage(
            "give --thread, --checkpoint or --directory".into(),
        ));
    }
    let client = Client::new(a.conn)?;
    let request = client
        .request(reqwest::Method::GET, "/v1/refs")
        .query(&query);
    let answer = client.send_json(request).await?;
    client.print(&answer, |v| {
        let refs = v["refs"].as_array().or_else(|| v.as_array());
        for r in refs.into_iter().flatten() {
            println!(
                "{}  {:<12} {:>8} tok  {}",
                short(&r["id"]),
                r["type"].as_str().unwrap_or_default(),
                r["tokens"],
                r["title"].as_str().unwrap_or_default()
            );
        }
    });
    Ok(())
}

/// Runs `stats`.
pub async fn stats(conn: Conn) -> Result<(), CliError> {
    let client = Client::new(conn)?;
    let answer = client
        .send_json(client.request(reqwest::Method::GET, "/v1/stats"))
        .await?;
    client.print(&answer, print_flat);
    Ok(())
}
