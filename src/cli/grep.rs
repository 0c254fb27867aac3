//! `cairn grep`: `grep -n` inside one memory, page after page.

use clap::Args;
use serde_json::Value;

use super::{CliError, Client, Conn};
use crate::model::GrepPattern;

/// `cairn grep`.
#[derive(Args, Debug)]
pub struct GrepArgs {
    #[command(flatten)]
    conn: Conn,
    /// The pattern and how to match it: the same options as REST's and MCP's.
    #[command(flatten)]
    what: GrepPattern,
    /// A memory id (or unique prefix of 12+ characters) or its `mem://` URI.
    target: String,
    /// Stop after this many matches (default: all, page after page).
    #[arg(short = 'm', long)]
    max_count: Option<u64>,
    /// Start after this line (a previous answer's `next`).
    #[arg(long, default_value_t = 0)]
    after: u64,
}

/// Runs `grep`: prints `N:line` for matches and `N-line` for context, like
/// `grep -n`, following `next` until the memory is exhausted.
pub async fn grep(a: GrepArgs) -> Result<(), CliError> {
    let id = a.target.strip_prefix("mem://").unwrap_or(&a.target);
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CliError::Usage(format!(
            "`{}` is neither an id nor a bare mem://<id> URI",
            a.target
        )));
    }
    let client = Client::new(a.conn)?;
    let (mut after, mut printed, mut last_shown) = (a.after, 0u64, 0u64);
    loop {
        let page = a.max_count.map_or(1000, |m| (m - printed).clamp(1, 1000));
        let request = client
            .request(reqwest::Method::GET, &format!("/v1/memories/{id}/grep"))
            .query(&a.what)
            .query(&[
                ("max_matches", page.to_string()),
                ("after", after.to_string()),
            ]);
        let answer = client.send_json(request).await?;
        let matches = answer["matches"].as_array().cloned().unwrap_or_default();
        printed += matches.len() as u64;
        client.print(&answer, |v| {
            print_page(v, a.what.context > 0, &mut last_shown)
        });
        match answer["next"].as_u64() {
            Some(next) if a.max_count.is_none_or(|m| printed < m) => after = next,
            Some(next) => {
                eprintln!("more: --after {next}");
                return Ok(());
            }
            None => return Ok(()),
        }
    }
}

/// Prints one answer's matches with their context, with `grouped` a `--`
/// between groups that do not touch; `last_shown` is the last line printed so far.
fn print_page(v: &Value, grouped: bool, last_shown: &mut u64) {
    let matches: Vec<&Value> = v["matches"].as_array().into_iter().flatten().collect();
    let lines: Vec<u64> = matches.iter().filter_map(|m| m["line"].as_u64()).collect();
    for m in matches {
        let line = m["line"].as_u64().unwrap_or_default();
        let before = strings(&m["before"]);
        let first = line - before.len() as u64;
        if grouped && *last_shown > 0 && first > *last_shown + 1 {
            println!("--");
        }
        for (k, text) in before.iter().enumerate() {
            let n = first + k as u64;
            if n > *last_shown {
                println!("{n}-{text}");
            }
        }
        if line > *last_shown {
            println!("{line}:{}", m["text"].as_str().unwrap_or_default());
        }
        *last_shown = (*last_shown).max(line);
        for (k, text) in strings(&m["after"]).iter().enumerate() {
            let n = line + 1 + k as u64;
            if lines.contains(&n) {
                break; // the next match prints itself and what follows it
            }
            if n > *last_shown {
                println!("{n}-{text}");
                *last_shown = n;
            }
        }
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}
