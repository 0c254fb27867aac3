//! The memory list with the filters of `GET /v1/memories`, and full-text
//! search with its hit lines.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Section, count, head};
use super::viewer::Viewer;
use crate::http::filters::list_query;
use crate::http::memories::page;
use crate::http::state::AppState;
use crate::http::views::SearchView;
use crate::model::MemoryFilter;

/// Memories on one page of the list.
const PAGE: u32 = 50;

/// Search results shown.
const RESULTS: u32 = 20;

/// The list's filters, as the form sends them (empty fields are no filter).
#[derive(Default, Deserialize)]
pub struct ListForm {
    #[serde(default)]
    q: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    subtype: String,
    #[serde(default)]
    tag: String,
    #[serde(default)]
    thread: String,
    #[serde(default)]
    checkpoint: String,
    #[serde(default)]
    directory: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    cursor: String,
}

fn given(text: &str) -> Option<String> {
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

impl ListForm {
    fn filters(&self) -> MemoryFilter {
        MemoryFilter {
            kind: given(&self.kind),
            subtype: given(&self.subtype),
            tag: given(&self.tag),
            thread: given(&self.thread),
            checkpoint: given(&self.checkpoint),
            directory: given(&self.directory),
            since: given(&self.since),
            until: given(&self.until),
        }
    }

    /// The query string of these filters (for the next page's link).
    fn query_without_cursor(&self) -> String {
        let pairs = [
            ("q", &self.q),
            ("type", &self.kind),
            ("subtype", &self.subtype),
            ("tag", &self.tag),
            ("thread", &self.thread),
            ("checkpoint", &self.checkpoint),
            ("directory", &self.directory),
            ("since", &self.since),
            ("until", &self.until),
        ];
        let kept: Vec<(&str, &String)> = pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        serde_urlencoded::to_string(kept).unwrap_or_default()
    }
}

/// `GET /ui/memories`: the list, or search results when `q` is given.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(form): Query<ListForm>,
) -> Response {
    let found = if given(&form.q).is_some() {
        search(&state, &viewer, &form).await
    } else {
        listing(&state, &viewer, &form).await
    };
    let results = match found {
        Ok(markup) => markup,
        Err((status, message)) => {
            html! { p.error role="alert" data-status=(status.as_u16()) { (message) } }
        }
    };
    let body = html! {
        form.filters method="get" action="/ui/memories" role="search" {
            @if viewer.namespace != viewer.caller.namespace {
                input type="hidden" name="ns" value=(viewer.namespace);
            }
            div { label for="q" { "Search" } input #q type="search" name="q" value=(form.q) placeholder="words in the content"; }
            div { label for="type" { "Type" } input #type name="type" value=(form.kind) size="12"; }
            div { label for="subtype" { "Subtype" } input #subtype name="subtype" value=(form.subtype) size="10"; }
            div { label for="tag" { "Tag" } input #tag name="tag" value=(form.tag) size="10"; }
            div { label for="thread" { "Thread" } input #thread name="thread" value=(form.thread) size="12"; }
            div { label for="checkpoint" { "Checkpoint" } input #checkpoint name="checkpoint" value=(form.checkpoint) size="10"; }
            div { label for="directory" { "Directory" } input #directory name="directory" value=(form.directory) size="12"; }
            div { label for="since" { "Since" } input #since name="since" value=(form.since) size="12" placeholder="RFC 3339"; }
            div { label for="until" { "Until" } input #until name="until" value=(form.until) size="12" placeholder="RFC 3339"; }
            button type="submit" { "Show" }
        }
        (results)
    };
    layout::page(&viewer, Section::Memories, "Memories", body)
}

type Failed = (StatusCode, String);

fn failed(e: impl Into<crate::http::error::AppError>) -> Failed {
    let e = e.into();
    (e.status(), e.message().to_owned())
}

async fn listing(state: &AppState, viewer: &Viewer, form: &ListForm) -> Result<Markup, Failed> {
    let query = list_query(form.filters(), viewer.namespace.clone(), PAGE).map_err(failed)?;
    let (views, next) = page(state, query, given(&form.cursor).as_deref())
        .await
        .map_err(failed)?;
    let next_href = next.map(|cursor| {
        let mut query = form.query_without_cursor();
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
        viewer.href(&format!("/ui/memories?{query}"))
    });
    Ok(html! {
        @if views.is_empty() {
            p.empty { "No memory matches." }
        } @else {
            table #memories {
                caption.visually-hidden { "Memories, newest first" }
                (head(&["Title", "Type", "Tags", "#Lines", "#Tokens", "Created (UTC)"]))
                tbody { @for m in &views { tr {
                    th scope="row" { a href=(viewer.href(&format!("/ui/memories/{}", m.id))) { (title_of(m.fields.title.as_deref(), &m.id)) } }
                    td { (m.fields.kind) @if let Some(s) = &m.fields.subtype { " · " (s) } }
                    td { (m.fields.tags.join(", ")) }
                    td.num { (count(m.lines)) }
                    td.num { (count(m.tokens)) }
                    td { (m.created_at.replace('T', " ").trim_end_matches('Z')) }
                } } }
            }
            @if let Some(href) = next_href { p { a rel="next" href=(href) { "Older memories" } } }
        }
    })
}

async fn search(state: &AppState, viewer: &Viewer, form: &ListForm) -> Result<Markup, Failed> {
    let filter = list_query(form.filters(), viewer.namespace.clone(), RESULTS).map_err(failed)?;
    let results = state.search.search(&form.q, filter).await.map_err(failed)?;
    let view = SearchView::from(results);
    Ok(html! {
        @if view.results.is_empty() {
            p.empty { "Nothing found. Content is indexed in the background: a memory stored a moment ago may not be found yet." }
        } @else {
            ol #results.results { @for r in &view.results { li {
                p.result-title {
                    a href=(viewer.href(&format!("/ui/memories/{}", r.id))) { (title_of(r.title.as_deref(), &r.id)) }
                    " · " (r.kind) @if r.matched == "fuzzy" { " · loose match" }
                }
                ul.hits { @for h in &r.hits { li {
                    a.line-no href=(viewer.href(&format!("/ui/memories/{}?from={}#L{}", r.id, h.line, h.line))) { "L" (h.line) }
                    " " code { (h.text) }
                } } }
            } } }
        }
    })
}

/// A memory's title, or the start of its id.
pub fn title_of(title: Option<&str>, id: &str) -> String {
    match title.map(str::trim).filter(|t| !t.is_empty()) {
        Some(title) => title.to_owned(),
        None => format!("{}…", &id[..id.len().min(12)]),
    }
}
