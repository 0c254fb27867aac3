//! One exchange: its figures, what Cairn changed (the pieces it took out,
//! each linked to its original, and the tools it added), the hidden
//! retrieval rounds with their usage and cost, and what the model saw —
//! the upstream body, message by message, markers highlighted.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use super::layout::{self, Section, count, head, usd, when};
use super::threads::session_href;
use super::transcript::{self, linked, pointer_href};
use super::viewer::Viewer;
use crate::domain::memories::ids::IdRef;
use crate::domain::proxying::exchanges::{ExchangeRecord, Figures, RoundFigures};
use crate::http::state::AppState;

/// `GET /ui/exchanges/{id}`.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    let not_found = || {
        layout::failure(
            Some(&viewer),
            StatusCode::NOT_FOUND,
            "No exchange by that id in this namespace.",
        )
    };
    if !id.starts_with("ex_") || id.len() > 80 {
        return not_found();
    }
    let detail = match state.exchanges.get(&viewer.namespace, &id).await {
        Ok(Some(detail)) => detail,
        Ok(None) => return not_found(),
        Err(e) => return super::domain_failure(&viewer, e),
    };
    let body = detail.body.map(|bytes| {
        serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    });
    let record = detail.record;
    let previews = previews(&state, &viewer, &record.figures).await;
    let page = html! {
        p.crumbs {
            a href=(viewer.href("/ui/")) { "Sessions" } " › "
            a href=(session_href(&viewer, &record.thread)) { (record.thread) } " › " (record.id)
        }
        (figures(&record))
        h2 { "What Cairn changed" }
        (changes(&viewer, &record.figures, &previews))
        h2 { "Rounds" }
        (rounds(&viewer, &record.figures.rounds))
        h2 { "What the model saw" }
        (seen(&viewer, &record.figures, body.as_ref()))
    };
    layout::page(&viewer, Section::Sessions, "Exchange", page)
}

fn figures(r: &ExchangeRecord) -> Markup {
    let f = &r.figures;
    html! {
        dl.figures {
            div { dt { "When (UTC)" } dd { (when(r.at_ms)) } }
            div { dt { "API · model" } dd { (r.api) " · " (r.model) @if f.streamed { " · streamed" } } }
            div { dt { "Status" } dd { (r.status) " · " (f.outcome) } }
            div { dt { "Latency" } dd { (f.latency_ms) " ms (Cairn: " (format!("{:.1}", f.added_ms)) " ms)" } }
            div { dt { "Tokens sent" } dd { (count(f.tokens_upstream)) " of " (count(f.tokens_client)) } }
            div { dt { "Counted by" } dd { (f.token_method) } }
            div { dt { "Billed" } dd { (usd(f.billed_usd)) } }
            div { dt { "Untouched" } dd { (usd(f.counterfactual.usd)) } }
            div { dt { "Governor" } dd {
                (f.tier)
                @if let Some(g) = &f.governor { " · " (serde_json::to_string(g).unwrap_or_default()) }
            } }
            @if let Some(first) = &f.first_offload {
                div { dt { "First offload" } dd {
                    @match (first.from_message, first.kept_messages) {
                        (Some(m), 0) => { "made at message " (m) ": " }
                        (Some(m), kept) => { "made at message " (m) ", with the " (kept) " before it that did not pay alone: " }
                        (None, kept) => { "not made, no message pays (" (kept) " weighed): " }
                    }
                    "saving " (usd(first.saving_usd)) " against " (usd(first.cost_usd))
                    " for the cache Cairn's tools break (" (count(first.prefix_tokens)) " tokens before it), over "
                    (first.requests_ahead) " requests"
                } }
            }
            @if let Some(skip) = &f.skipped {
                div { dt { "Sent unchanged" } dd.skip-reason { (skip) } }
            }
        }
        p.hint { "Untouched: " (f.counterfactual.method) " (" (count(f.counterfactual.input)) " input tokens, "
            (count(f.counterfactual.cache_read)) " read from the cache, " (count(f.counterfactual.cache_write)) " written)." }
    }
}

/// Lines of each piece's original shown beside its marker.
const PREVIEW_LINES: u64 = 12;

/// The first lines of each piece this request took out: what the client
/// sent where the model saw a marker.
async fn previews(state: &AppState, viewer: &Viewer, f: &Figures) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for piece in &f.pieces {
        let Ok(id) = IdRef::parse(&piece.memory_id) else {
            continue;
        };
        if let Ok(slice) = state
            .memories
            .lines(&viewer.namespace, &id, Some(1), Some(PREVIEW_LINES))
            .await
        {
            let mut text = String::from_utf8_lossy(&slice.content).into_owned();
            if slice.end < slice.total_lines {
                text.push_str(&format!("… {} more lines", slice.total_lines - slice.end));
            }
            out.insert(piece.memory_id.clone(), text);
        }
    }
    out
}

fn changes(viewer: &Viewer, f: &Figures, previews: &HashMap<String, String>) -> Markup {
    html! {
        @if f.pieces.is_empty() && f.pieces_carried == 0 && f.tools_added.is_empty() {
            p { "Nothing: the request went upstream as the client sent it." }
        } @else {
            @if !f.pieces.is_empty() {
                table #pieces {
                    caption { "Pieces taken out by this request (each replaced by a marker; the link opens the original)" }
                    (head(&["#Message", "Original", "#Tokens", "Why"]))
                    tbody { @for p in &f.pieces { tr {
                        td.num { a href=(format!("#m{}", p.message)) { (p.message) } }
                        td {
                            a.pointer href=(pointer_href(viewer, &p.memory_id, None)) { "mem://" (p.memory_id) }
                            @if let Some(text) = previews.get(&p.memory_id) {
                                details.sent { summary { "What the client sent here" } pre { (text) } }
                            }
                        }
                        td.num { (count(p.tokens)) }
                        td { @if p.governed { "the governor's tier" } @else { "over the offload threshold" } }
                    } } }
                }
            }
            @if f.pieces_carried > 0 {
                p { (f.pieces_carried) " earlier pieces (" (count(f.tokens_carried)) " tokens) were replaced again by the same markers, so the cached prefix stays byte-identical." }
            }
            @if !f.tools_added.is_empty() {
                p { "Tools added: " (f.tools_added.join(", ")) "." }
            }
        }
    }
}

fn rounds(viewer: &Viewer, rounds: &[RoundFigures]) -> Markup {
    html! {
        @if rounds.is_empty() {
            p { "No upstream call was recorded." }
        } @else {
            table #rounds {
                caption.visually-hidden { "Upstream calls, in order" }
                (head(&["#Round", "Model", "#Input", "#Cache read", "#Cache write", "#Output", "#Cost", "Cairn tools the model called"]))
                tbody { @for (n, round) in rounds.iter().enumerate() { tr {
                    td.num { (n + 1) }
                    td { (round.model) }
                    td.num { (count(round.input)) }
                    td.num { (count(round.cache_read)) }
                    td.num { (count(round.cache_write)) }
                    td.num { (count(round.output)) }
                    td.num { (usd(round.usd)) }
                    td {
                        @if round.retrievals.is_empty() { "–" }
                        ul.plain { @for x in &round.retrievals { li {
                            (x.tool) " "
                            @if let Some(target) = &x.target { code { (linked(viewer, target)) } }
                            " → " (count(x.bytes)) " bytes, " (count(x.tokens)) " tokens"
                            @if x.error { " (failed)" }
                        } } }
                    }
                } } }
            }
        }
    }
}

fn seen(viewer: &Viewer, f: &Figures, body: Option<&Value>) -> Markup {
    let Some(body) = body else {
        return html! { p { "The body is no longer kept: an earlier exchange of its thread it was stored against has expired." } };
    };
    let turns = transcript::turns(body);
    let tools = transcript::tool_names(body);
    let pieces: Vec<usize> = f.pieces.iter().map(|p| p.message).collect();
    html! {
        @if !tools.is_empty() {
            details { summary { (tools.len()) " tools offered" } p { (tools.join(", ")) } }
        }
        @if turns.is_empty() {
            pre { (linked(viewer, &serde_json::to_string_pretty(body).unwrap_or_default())) }
        }
        ol.transcript {
            @for turn in &turns {
                @let id = turn.index.map(|i| format!("m{i}"));
                @let fresh = turn.index.is_some_and(|i| pieces.contains(&i));
                li.turn.(turn.role.as_str()).offloaded[fresh] id=[id] {
                    p.role {
                        (turn.role)
                        @if let Some(i) = turn.index { span.index { " · message " (i) } }
                        @if fresh { span.badge { "offloaded by this request" } }
                    }
                    @for b in &turn.blocks { (transcript::block(viewer, b)) }
                }
            }
        }
    }
}
