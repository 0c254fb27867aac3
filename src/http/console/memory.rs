//! One memory: its metadata and summary; its lines a page at a time (line
//! numbers, jump to a line, next and previous), grep with context, jq for
//! JSON; download; delete (a form with the CSRF token); and the exchanges
//! that took it out or fetched it back. Only what is shown is read, so a
//! 1 GiB memory pages as fast as a small one.

use axum::Form;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use futures::StreamExt;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Section, count};
use super::login::CsrfForm;
use super::memories::title_of;
use super::viewer::Viewer;
use crate::domain::memories::grep::GrepQuery;
use crate::domain::memories::ids::IdRef;
use crate::domain::memories::read::content;
use crate::domain::proxying::exchanges::{ExchangeFilter, ExchangeRecord};
use crate::http::error::AppError;
use crate::http::state::AppState;
use crate::http::views::MemoryView;
use crate::model::GrepPattern;

/// Lines on one page.
const PAGE_LINES: u64 = 200;

/// Most grep matches shown.
const GREP_MATCHES: u32 = 200;

/// Exchanges looked through for those that used a memory (the newest).
const USED_SCAN: u32 = 2_000;

/// What to show of the memory.
#[derive(Default, Deserialize)]
pub struct ShowParams {
    /// First line of the page (1 when not given).
    from: Option<String>,
    /// A regex to grep for.
    #[serde(default)]
    grep: String,
    /// Lines of context around each match.
    context: Option<u32>,
    /// Match regardless of case.
    #[serde(default)]
    ignore_case: Option<String>,
    /// Grep on after this line (a previous answer's stopping point).
    after: Option<u64>,
    /// A jq program.
    #[serde(default)]
    jq: String,
}

/// `GET /ui/memories/{id}`.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(params): Query<ShowParams>,
) -> Response {
    let id_ref = match IdRef::parse(&id) {
        Ok(id) => id,
        Err(e) => return super::domain_failure(&viewer, e),
    };
    let record = match state.memories.get(&viewer.namespace, &id_ref).await {
        Ok(record) => record,
        Err(e) => return super::domain_failure(&viewer, e),
    };
    let memory = MemoryView::new(record, state.memories.limits());
    let own = |path: &str| viewer.href(&format!("/ui/memories/{}{path}", memory.id));
    let mode = if !params.jq.trim().is_empty() {
        jq(&state, &viewer, &memory, &params.jq).await
    } else if !params.grep.is_empty() {
        grep(&state, &viewer, &memory, &params).await
    } else {
        lines(&state, &viewer, &memory, params.from.as_deref()).await
    };
    let used = used_by(&state, &viewer, &memory.id).await;
    let is_json = memory.fields.mime.contains("json");
    let body = html! {
        p.crumbs { a href=(viewer.href("/ui/memories")) { "Memories" } " › " (title_of(memory.fields.title.as_deref(), &memory.id)) }
        (metadata(&memory))
        details.summary { summary { "Summary" } pre { (memory.summary) } }
        div.actions {
            a.button href=(own("/download")) download { "Download" }
            form method="post" action=(own("/delete")) {
                input type="hidden" name="csrf" value=(viewer.csrf);
                button.danger type="submit" { "Delete" }
            }
        }
        div.tools {
            form method="get" action=(format!("/ui/memories/{}", memory.id)) {
                (ns_field(&viewer))
                label for="from" { "Go to line" }
                input #from name="from" type="number" min="1" max=(memory.lines.max(1)) value=(params.from.as_deref().unwrap_or("1"));
                button type="submit" { "Go" }
            }
            form method="get" action=(format!("/ui/memories/{}", memory.id)) role="search" {
                (ns_field(&viewer))
                label for="grep" { "Grep" }
                input #grep name="grep" value=(params.grep) placeholder="regex";
                label for="context" { "Context" }
                input #context name="context" type="number" min="0" max="10" value=(params.context.unwrap_or(2));
                label { input name="ignore_case" type="checkbox" value="1" checked[params.ignore_case.is_some()]; " ignore case" }
                button type="submit" { "Grep" }
            }
            @if is_json {
                form method="get" action=(format!("/ui/memories/{}", memory.id)) {
                    (ns_field(&viewer))
                    label for="jq" { "jq" }
                    input #jq name="jq" value=(params.jq) placeholder=".items[0]";
                    button type="submit" { "Run" }
                }
            }
        }
        (mode)
        h2 { "Exchanges that used it" }
        (used)
    };
    layout::page(
        &viewer,
        Section::Memories,
        &title_of(memory.fields.title.as_deref(), &memory.id),
        body,
    )
}

fn ns_field(viewer: &Viewer) -> Markup {
    html! {
        @if viewer.namespace != viewer.caller.namespace {
            input type="hidden" name="ns" value=(viewer.namespace);
        }
    }
}

fn metadata(m: &MemoryView) -> Markup {
    html! {
        dl.figures {
            div { dt { "Pointer" } dd { code { (m.uri) } } }
            div { dt { "Type" } dd { (m.fields.kind) @if let Some(s) = &m.fields.subtype { " · " (s) } " · " (m.fields.mime) } }
            div { dt { "Size" } dd { (count(m.lines)) " lines, " (count(m.bytes)) " bytes, " (count(m.tokens)) " tokens" } }
            @if !m.fields.tags.is_empty() { div { dt { "Tags" } dd { (m.fields.tags.join(", ")) } } }
            @if let Some(t) = &m.fields.thread { div { dt { "Thread" } dd { (t) } } }
            div { dt { "Created" } dd { (m.created_at) } }
            div { dt { "Reads" } dd { (m.access_count) } }
            @if let Some(c) = &m.corrupt { div { dt { "Corrupt" } dd.error { (c) } } }
        }
    }
}

async fn lines(state: &AppState, viewer: &Viewer, m: &MemoryView, from: Option<&str>) -> Markup {
    let from = match from.map(str::trim).filter(|f| !f.is_empty()) {
        None => 1,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return problem(
                    StatusCode::BAD_REQUEST,
                    "A line number is a whole number from 1.",
                );
            }
        },
    };
    if m.lines == 0 {
        return html! { p.empty { "The memory is empty." } };
    }
    let from = from.min(m.lines);
    let id = id_of(m);
    let slice = match state
        .memories
        .lines(
            &viewer.namespace,
            &id,
            Some(from),
            Some(from + PAGE_LINES - 1),
        )
        .await
    {
        Ok(slice) => slice,
        Err(e) => return problem_of(e),
    };
    let text = String::from_utf8_lossy(&slice.content);
    let page = |n: u64| viewer.href(&format!("/ui/memories/{}?from={n}", m.id));
    let previous = (slice.start > 1).then(|| page(slice.start.saturating_sub(PAGE_LINES).max(1)));
    let next = (slice.end < slice.total_lines).then(|| page(slice.end + 1));
    html! {
        nav.pager aria-label="Pages of lines" {
            @if let Some(href) = &previous { a rel="prev" href=(href) { "Previous lines" } }
            span { "Lines " (count(slice.start)) "–" (count(slice.end)) " of " (count(slice.total_lines)) }
            @if let Some(href) = &next { a rel="next" href=(href) { "Next lines" } }
        }
        @if slice.truncated { p.hint { "Cut at the slice byte cap: the next page goes on from the next line." } }
        table.lines #lines {
            caption.visually-hidden { "Lines with their numbers" }
            tbody {
                @for (i, line) in text.lines().enumerate() {
                    @let n = slice.start + i as u64;
                    tr id=(format!("L{n}")) { th scope="row" { (n) } td { code { (line) } } }
                }
            }
        }
    }
}

async fn grep(state: &AppState, viewer: &Viewer, m: &MemoryView, params: &ShowParams) -> Markup {
    let what = GrepPattern {
        pattern: params.grep.clone(),
        fixed: false,
        ignore_case: params.ignore_case.is_some(),
        context: params.context.unwrap_or(2).min(10),
    };
    let query = GrepQuery::new(what, Some(GREP_MATCHES), params.after.unwrap_or(0));
    let id = id_of(m);
    let result = match state.memories.grep(&viewer.namespace, &id, &query).await {
        Ok((_, result)) => result,
        Err(e) => return problem_of(e),
    };
    let line = |n: u64| viewer.href(&format!("/ui/memories/{}?from={n}#L{n}", m.id));
    let more = result.next.map(|after| {
        let mut query = vec![
            ("grep", params.grep.clone()),
            ("context", query.what.context.to_string()),
            ("after", after.to_string()),
        ];
        if params.ignore_case.is_some() {
            query.push(("ignore_case", "1".to_owned()));
        }
        let query = serde_urlencoded::to_string(query).unwrap_or_default();
        (
            after,
            viewer.href(&format!("/ui/memories/{}?{query}", m.id)),
        )
    });
    html! {
        p #grep-summary {
            (count(result.matches.len() as u64)) " matching lines"
            @if let Some(after) = params.after { " after line " (count(after)) }
            " · " (count(result.scanned_bytes)) " bytes read, " (count(result.skipped_bytes)) " skipped by the index"
            @if result.truncated {
                @if result.matches.len() as u32 >= GREP_MATCHES { " · stopped at " (GREP_MATCHES) " matches" }
                @else { " · stopped at the scan cap" }
            }
        }
        ol.matches #matches { @for g in &result.matches { li {
            @for (i, before) in g.before.iter().enumerate() {
                div.context { span.line-no { (g.line - (g.before.len() - i) as u64) } " " code { (before) } }
            }
            div.match { a.line-no href=(line(g.line)) { (g.line) } " " code { (g.text) } @if g.cut { " …" } }
            @for (i, after) in g.after.iter().enumerate() {
                div.context { span.line-no { (g.line + 1 + i as u64) } " " code { (after) } }
            }
        } } }
        @if let Some((after, href)) = more {
            p { a #grep-more rel="next" href=(href) { "Grep on from line " (count(after + 1)) } }
        }
    }
}

/// The full id of a memory already read.
fn id_of(m: &MemoryView) -> IdRef {
    IdRef::Full(crate::domain::memories::ids::MemoryId::from_stored(
        m.id.clone(),
    ))
}

async fn jq(state: &AppState, viewer: &Viewer, m: &MemoryView, program: &str) -> Markup {
    let id = id_of(m);
    match state
        .memories
        .query(&viewer.namespace, &id, program, &state.jq)
        .await
    {
        Ok((_, result)) => html! {
            p { (result.results.len()) " outputs" @if result.truncated { " (cut at the output cap)" } }
            @for out in &result.results { pre.jq { (pretty(out.get())) } }
        },
        Err(e) => problem_of(e),
    }
}

fn pretty(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| json.to_owned())
}

fn problem(status: StatusCode, message: &str) -> Markup {
    html! { p.error role="alert" data-status=(status.as_u16()) { (message) } }
}

fn problem_of(e: crate::domain::DomainError) -> Markup {
    let e = AppError::from(e);
    problem(e.status(), e.message())
}

/// The exchanges among the newest that took the memory out or fetched it.
async fn used_by(state: &AppState, viewer: &Viewer, id: &str) -> Markup {
    let records = match state
        .exchanges
        .newest(&viewer.namespace, ExchangeFilter::default(), USED_SCAN)
        .await
    {
        Ok(records) => records,
        Err(e) => return problem_of(e),
    };
    let used: Vec<(&ExchangeRecord, &str)> = records
        .iter()
        .filter_map(|r| {
            let f = &r.figures;
            if f.pieces.iter().any(|p| p.memory_id == id) {
                Some((r, "took it out"))
            } else if f
                .rounds
                .iter()
                .flat_map(|round| &round.retrievals)
                .any(|x| x.target.as_deref().is_some_and(|t| t.contains(id)))
            {
                Some((r, "fetched from it"))
            } else {
                None
            }
        })
        .collect();
    html! {
        @if used.is_empty() {
            p { "None of the newest " (count(u64::from(USED_SCAN))) " exchanges took it out or fetched from it." }
        } @else {
            ul #used { @for (r, how) in &used { li {
                a href=(viewer.href(&format!("/ui/exchanges/{}", r.id))) { (super::layout::when(r.at_ms)) " · " (r.thread) }
                " — " (how)
            } } }
        }
    }
}

/// `GET /ui/memories/{id}/download`: the content as a file.
pub async fn download(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    let opened = match IdRef::parse(&id) {
        Ok(id) => state.memories.open(&viewer.namespace, &id).await,
        Err(e) => Err(e),
    };
    let (record, reader) = match opened {
        Ok(opened) => opened,
        Err(e) => return super::domain_failure(&viewer, e),
    };
    let size = record.bytes;
    let stream = match content::stream(reader, record.id.clone(), 0, size, true).await {
        Ok(stream) => stream,
        Err(e) => return super::domain_failure(&viewer, e),
    };
    let body = Body::from_stream(stream.map(|piece| {
        piece.map_err(|e| {
            tracing::error!(error = %e, "console download aborted");
            std::io::Error::other(e.to_string())
        })
    }));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    let mime = HeaderValue::from_str(&record.fields.mime)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_TYPE, mime);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    let disposition = format!(
        "attachment; filename=\"{}.txt\"",
        &record.id[..record.id.len().min(16)]
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// `POST /ui/memories/{id}/delete`: deletes it (the form's CSRF token first).
pub async fn delete(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Some(refused) = viewer.refuse_csrf(&form.csrf) {
        return refused;
    }
    let deleted = match IdRef::parse(&id) {
        Ok(id) => state.memories.delete(&viewer.namespace, &id).await,
        Err(e) => Err(e),
    };
    match deleted {
        Ok(_) => Redirect::to(&viewer.href("/ui/memories")).into_response(),
        Err(e) => super::domain_failure(&viewer, e),
    }
}
