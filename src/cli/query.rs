//! `cairn query`: a jq program over one JSON memory, printed like `jq -c`.

use clap::Args;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{CliError, Client, Conn};

/// `cairn query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    conn: Conn,
    /// A memory id (or unique prefix of 12+ characters) or its `mem://` URI.
    target: String,
    /// The jq program.
    program: String,
}

/// The server's answer, values kept as the server wrote them (key order too).
#[derive(Deserialize)]
struct Answer {
    results: Vec<Box<RawValue>>,
    truncated: bool,
}

/// Runs `query`: prints each output value on its own line, like `jq -c`.
pub async fn query(a: QueryArgs) -> Result<(), CliError> {
    let id = a.target.strip_prefix("mem://").unwrap_or(&a.target);
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CliError::Usage(format!(
            "`{}` is neither an id nor a bare mem://<id> URI",
            a.target
        )));
    }
    let json = a.conn.json;
    let client = Client::new(a.conn)?;
    let request = client
        .request(reqwest::Method::GET, &format!("/v1/memories/{id}/query"))
        .query(&[("jq", &a.program)]);
    let body = client.send(request).await?.text().await?;
    if json {
        println!("{body}");
        return Ok(());
    }
    let answer: Answer = serde_json::from_str(&body)
        .map_err(|e| CliError::Usage(format!("unexpected answer from the server: {e}")))?;
    for value in &answer.results {
        println!("{}", value.get());
    }
    if answer.truncated {
        eprintln!("truncated: the output caps stopped the program (1,000 values or 64 KiB)");
    }
    Ok(())
}
