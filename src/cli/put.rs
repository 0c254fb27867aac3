//! `cairn put`: streams stdin or a file as a raw upload.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use futures::StreamExt;
use tokio_util::io::ReaderStream;

use super::{CliError, Client, Conn};
use crate::model::PutFields;

/// `cairn put`.
#[derive(Args, Debug)]
pub struct PutArgs {
    #[command(flatten)]
    conn: Conn,
    /// Read the content from stdin.
    #[arg(long, conflicts_with = "file")]
    stdin: bool,
    /// Read the content from this file.
    #[arg(long)]
    file: Option<PathBuf>,
    /// What the content is: the same fields as REST's and MCP's (the
    /// content is sent as bytes, so `--mime` defaults to text/plain).
    #[command(flatten)]
    fields: PutFields,
}

/// A streamed request body from a file or stdin (`-`), with a progress bar
/// on stderr when it is a terminal.
pub(super) async fn body_of(path: &str, len: Option<u64>) -> Result<reqwest::Body, CliError> {
    let reader: Box<dyn tokio::io::AsyncRead + Unpin + Send + Sync> = if path == "-" {
        Box::new(tokio::io::stdin())
    } else {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| CliError::Usage(format!("cannot open `{path}`: {e}")))?;
        Box::new(file)
    };
    let len = match (len, path) {
        (Some(len), _) => Some(len),
        (None, "-") => None,
        (None, p) => tokio::fs::metadata(p).await.ok().map(|m| m.len()),
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = match len {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        let template = if len.is_some() {
            "{bar:40} {bytes}/{total_bytes} {bytes_per_sec}"
        } else {
            "{spinner} {bytes} {bytes_per_sec}"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar
    });
    let stream = ReaderStream::with_capacity(reader, 256 << 10).map(move |chunk| {
        if let (Some(bar), Ok(chunk)) = (&bar, &chunk) {
            bar.inc(chunk.len() as u64);
        }
        chunk
    });
    Ok(reqwest::Body::wrap_stream(stream))
}

/// Runs `put`.
pub async fn run(a: PutArgs) -> Result<(), CliError> {
    let source = match (&a.file, a.stdin) {
        (Some(file), false) => file.to_string_lossy().into_owned(),
        (None, true) => "-".to_owned(),
        _ => return Err(CliError::Usage("give --stdin or --file PATH".into())),
    };
    let client = Client::new(a.conn)?;
    let fields = PutFields {
        mime: a.fields.mime.or_else(|| Some("text/plain".to_owned())),
        ..a.fields
    };
    let body = body_of(&source, None).await?;
    let request = client
        .request(reqwest::Method::POST, "/v1/memories")
        .query(&fields)
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .body(body);
    let answer = client.send_json(request).await?;
    client.print(&answer, |v| {
        let dedup = if v["deduplicated"].as_bool() == Some(true) {
            " (deduplicated)"
        } else {
            ""
        };
        // A large put answers before its exact count: say the figure is the estimate.
        let settling = if v["tokens_settling"].as_bool() == Some(true) {
            " (estimated; the exact count follows)"
        } else {
            ""
        };
        println!(
            "{}  {} bytes, {} lines, {} tokens{settling}{dedup}",
            v["uri"].as_str().unwrap_or_default(),
            v["bytes"],
            v["lines"],
            v["tokens"]
        );
        println!("{}", v["summary"].as_str().unwrap_or_default());
    });
    Ok(())
}
