//! The session list (the ledger's threads, newest first) and one session's
//! exchanges as a timeline.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Section, count, head, percent, times, usd, when};
use super::viewer::Viewer;
use crate::domain::proxying::exchanges::sessions::{SESSION_SCAN, SessionSummary, sessions};
use crate::domain::proxying::exchanges::{ExchangeFilter, ExchangeRecord};
use crate::http::state::AppState;

/// Most exchanges a session page shows.
const SESSION_EXCHANGES: u32 = 2_000;

/// `GET /ui/`: the sessions of the namespace.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Response {
    let records =
        match super::newest(&state, &viewer, ExchangeFilter::default(), SESSION_SCAN).await {
            Ok(records) => records,
            Err(page) => return page,
        };
    let list = sessions(&records);
    let body = html! {
        @if list.is_empty() {
            p.empty { "No proxied exchange yet in this namespace. Point an agent's OpenAI or Anthropic base URL at Cairn (see the README) and its sessions appear here." }
        } @else {
            p {
                (list.len()) " sessions, " (count(records.len() as u64)) " exchanges"
                @if records.len() as u32 >= SESSION_SCAN { " (the newest " (count(u64::from(SESSION_SCAN))) ")" }
                ". Untouched: what the same requests would have cost sent as the client sent them, with the provider's prompt caching."
            }
            table #sessions {
                caption.visually-hidden { "Sessions, newest first" }
                (head(&["Session", "Last request (UTC)", "#Turns", "Models", "#Tokens sent", "#Untouched", "#Billed", "#Untouched cost", "#Billed ÷ untouched", "#Cache hit", "#Fetch-back"]))
                tbody {
                    @for s in &list { (session_row(&viewer, s)) }
                }
            }
        }
    };
    layout::page(&viewer, Section::Sessions, "Sessions", body)
}

fn session_row(viewer: &Viewer, s: &SessionSummary) -> Markup {
    html! {
        tr {
            th scope="row" { a href=(session_href(viewer, &s.thread)) { (s.thread) } }
            td { (when(s.last_ms)) }
            td.num { (s.turns) }
            td { (s.models.join(", ")) }
            td.num { (count(s.tokens_upstream)) }
            td.num { (count(s.tokens_client)) }
            td.num { (usd(s.billed_usd)) }
            td.num { (usd(s.counterfactual_usd)) }
            td.num { (times(s.billed_usd, s.counterfactual_usd)) }
            td.num { (percent(s.cache_hit_ratio())) }
            td.num title=(format!("{} tokens fetched back of {} offloaded", s.fetched_tokens, s.offloaded_tokens)) {
                (percent(s.fetch_back_rate()))
            }
        }
    }
}

/// The link to one session's page.
pub fn session_href(viewer: &Viewer, thread: &str) -> String {
    let query = serde_urlencoded::to_string([("thread", thread)]).unwrap_or_default();
    viewer.href(&format!("/ui/session?{query}"))
}

/// The session page's query.
#[derive(Deserialize)]
pub struct SessionParams {
    thread: String,
}

/// `GET /ui/session?thread=…`: one session's exchanges, oldest first.
pub async fn one(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(params): Query<SessionParams>,
) -> Response {
    let filter = ExchangeFilter {
        thread: Some(params.thread.clone()),
        ..ExchangeFilter::default()
    };
    let mut records = match super::newest(&state, &viewer, filter, SESSION_EXCHANGES).await {
        Ok(records) => records,
        Err(page) => return page,
    };
    if records.is_empty() {
        return layout::failure(
            Some(&viewer),
            StatusCode::NOT_FOUND,
            "No session by that name in this namespace.",
        );
    }
    records.reverse();
    let summary = sessions(&records).pop().unwrap_or_default();
    let body = html! {
        p.crumbs { a href=(viewer.href("/ui/")) { "Sessions" } " › " (params.thread) }
        (summary_list(&summary))
        table #timeline {
            caption.visually-hidden { "Exchanges, oldest first" }
            (head(&["##", "Time (UTC)", "API · model", "#Sent / untouched tokens", "#Pieces out", "#Rounds", "Fetched back", "#Billed", "#Untouched", "Outcome"]))
            tbody {
                @for (n, r) in records.iter().enumerate() { (exchange_row(&viewer, n + 1, r)) }
            }
        }
    };
    layout::page(&viewer, Section::Sessions, "Session", body)
}

fn summary_list(s: &SessionSummary) -> Markup {
    html! {
        dl.figures {
            div { dt { "Turns" } dd { (s.turns) } }
            div { dt { "From" } dd { (when(s.first_ms)) } }
            div { dt { "To" } dd { (when(s.last_ms)) } }
            div { dt { "Tokens sent" } dd { (count(s.tokens_upstream)) " of " (count(s.tokens_client)) } }
            div { dt { "Billed" } dd { (usd(s.billed_usd)) } }
            div { dt { "Untouched cost" } dd { (usd(s.counterfactual_usd)) } }
            div { dt { "Billed ÷ untouched" } dd { (times(s.billed_usd, s.counterfactual_usd)) } }
            div { dt { "Cache hit" } dd { (percent(s.cache_hit_ratio())) } }
            div { dt { "Pieces offloaded" } dd { (s.pieces) " (" (count(s.offloaded_tokens)) " tokens)" } }
            div { dt { "Fetched back" } dd { (s.retrievals) " calls, " (count(s.fetched_tokens)) " tokens (" (percent(s.fetch_back_rate())) ")" } }
            div { dt { "Sent unchanged" } dd { (s.skipped) } }
        }
    }
}

fn exchange_row(viewer: &Viewer, n: usize, r: &ExchangeRecord) -> Markup {
    let f = &r.figures;
    let retrievals: Vec<String> = f
        .rounds
        .iter()
        .flat_map(|round| round.retrievals.iter())
        .map(|x| x.tool.clone())
        .collect();
    html! {
        tr {
            td.num { a href=(viewer.href(&format!("/ui/exchanges/{}", r.id))) aria-label=(format!("Exchange {n}")) { (n) } }
            td { (when(r.at_ms)) }
            td { (r.api) " · " (r.model) @if f.streamed { " · streamed" } }
            td.num { (count(f.tokens_upstream)) " / " (count(f.tokens_client)) }
            td.num { (f.pieces.len()) @if f.pieces_carried > 0 { " (+" (f.pieces_carried) " again)" } }
            td.num { (f.rounds.len()) }
            td { @if retrievals.is_empty() { "–" } @else { (retrievals.join(", ")) } }
            td.num { (usd(f.billed_usd)) }
            td.num { (usd(f.counterfactual.usd)) }
            td {
                (f.outcome)
                @if let Some(skip) = &f.skipped { br; span.skip-reason { "sent unchanged: " (skip) } }
            }
        }
    }
}
