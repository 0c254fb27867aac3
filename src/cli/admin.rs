//! `prune`, `gc`, `verify`: the admin endpoints.

use clap::Args;
use serde_json::{Value, json};

use super::{CliError, Client, Conn, print_flat};
use crate::model::MemoryFilter;

/// `cairn prune`.
#[derive(Args, Debug)]
pub struct PruneArgs {
    #[command(flatten)]
    conn: Conn,
    /// Remove memories older than this many days.
    #[arg(long)]
    keep_days: Option<u64>,
    /// Keep at most this many memories.
    #[arg(long)]
    keep_entries: Option<u64>,
    /// Keep at most this many stored bytes.
    #[arg(long)]
    max_bytes: Option<u64>,
    /// Which memories go first: `oldest` or `least_accessed`.
    #[arg(long, default_value = "oldest")]
    order: String,
    /// Only report what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// Which memories the rule looks at: the filter of `list` and `search`.
    #[command(flatten)]
    filter: MemoryFilter,
}

/// `cairn verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    conn: Conn,
    /// Quarantine corrupt objects and mark their memories.
    #[arg(long)]
    repair: bool,
}

fn drop_nulls(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        map.retain(|_, v| !v.is_null());
    }
    v
}

/// Runs `prune`.
pub async fn prune(a: PruneArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let mut body = json!({
        "keep_days": a.keep_days, "keep_entries": a.keep_entries, "max_bytes": a.max_bytes,
        "order": a.order, "dry_run": a.dry_run,
    });
    if let (Value::Object(body), Ok(Value::Object(filter))) =
        (&mut body, serde_json::to_value(&a.filter))
    {
        body.extend(filter);
    }
    let body = drop_nulls(body);
    let request = client
        .request(reqwest::Method::POST, "/v1/admin/prune")
        .json(&body);
    let answer = client.send_json(request).await?;
    client.print(&answer, print_flat);
    Ok(())
}

/// Runs `gc`.
pub async fn gc(conn: Conn) -> Result<(), CliError> {
    let client = Client::new(conn)?;
    let request = client
        .request(reqwest::Method::POST, "/v1/admin/gc")
        .json(&json!({}));
    let answer = client.send_json(request).await?;
    client.print(&answer, print_flat);
    Ok(())
}

/// Runs `verify`.
pub async fn verify(a: VerifyArgs) -> Result<(), CliError> {
    let client = Client::new(a.conn)?;
    let request = client
        .request(reqwest::Method::POST, "/v1/admin/verify")
        .json(&json!({"repair": a.repair}));
    let answer = client.send_json(request).await?;
    client.print(&answer, print_flat);
    Ok(())
}
