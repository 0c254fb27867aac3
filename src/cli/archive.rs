//! `export` and `import`: the namespace as one tar archive, streamed both ways.

use std::path::PathBuf;

use clap::Args;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use super::{CliError, Client, Conn, print_flat};

/// `cairn export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    conn: Conn,
    /// Where to write the archive (`-` for stdout).
    #[arg(short, long, default_value = "-")]
    output: String,
}

/// `cairn import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    conn: Conn,
    /// The archive (`-` for stdin).
    file: String,
}

/// Runs `export`.
pub async fn export(a: ExportArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let response = client
        .send(client.request(reqwest::Method::GET, "/v1/export"))
        .await?;
    let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = if a.output == "-" {
        Box::new(tokio::io::stdout())
    } else {
        Box::new(tokio::fs::File::create(PathBuf::from(&a.output)).await?)
    };
    let mut body = response.bytes_stream();
    let mut bytes = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| CliError::Other(format!("export broke off: {e}")))?;
        bytes += chunk.len() as u64;
        out.write_all(&chunk).await?;
    }
    out.flush().await?;
    if a.output != "-" && !client.json() {
        eprintln!("wrote {bytes} bytes to {}", a.output);
    }
    Ok(())
}

/// Runs `import`.
pub async fn import(a: ImportArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let body = super::put::body_of(&a.file, None).await?;
    let request = client
        .request(reqwest::Method::POST, "/v1/import")
        .header(reqwest::header::CONTENT_TYPE, "application/x-tar")
        .body(body);
    let answer = client.send_json(request).await?;
    client.print(&answer, print_flat);
    Ok(())
}
