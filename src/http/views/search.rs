//! Answers of a search: matching memories, best first, with their hit lines.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::memories::ids::MemoryId;
use crate::domain::memories::read::slicing::line_uri;
use crate::domain::search::SearchResult;

/// A line of a memory holding the query's terms.
#[derive(Serialize, ToSchema)]
pub struct HitView {
    /// 1-based line number.
    pub line: u64,
    /// The line (cut to 200 characters).
    pub text: String,
    /// Pointer to the line: `mem://<id>#L<n>-<n>`.
    pub uri: String,
}

/// A matching memory.
#[derive(Serialize, ToSchema)]
pub struct SearchResultView {
    /// SHA-256 of the content.
    pub id: String,
    /// Pointer: `mem://<id>`.
    pub uri: String,
    /// Title.
    pub title: Option<String>,
    /// Type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Subtype.
    pub subtype: Option<String>,
    /// Relevance (negated BM25 of the best matching frame; higher is better).
    pub score: f64,
    /// Matching lines (at most 5), in line order.
    pub hits: Vec<HitView>,
    /// `exact`: the query as given matched. `fuzzy`: it matched nothing, and
    /// this result matched the looser retry (any of its words, each as the
    /// prefix of its stem).
    #[serde(rename = "match")]
    #[schema(example = "exact")]
    pub matched: String,
}

impl From<SearchResult> for SearchResultView {
    fn from(r: SearchResult) -> Self {
        let id = MemoryId::from_stored(r.record.id);
        Self {
            uri: format!("mem://{id}"),
            hits: r
                .hits
                .into_iter()
                .map(|h| HitView {
                    uri: line_uri(&id, h.line, h.line),
                    line: h.line,
                    text: h.text,
                })
                .collect(),
            id: id.to_string(),
            title: r.record.fields.title,
            kind: r.record.fields.kind,
            subtype: r.record.fields.subtype,
            score: r.score,
            matched: if r.fuzzy { "fuzzy" } else { "exact" }.to_owned(),
        }
    }
}

/// Search results, best first.
#[derive(Serialize, ToSchema)]
pub struct SearchView {
    /// Matching memories, best first.
    pub results: Vec<SearchResultView>,
    /// Only with `wait_ms`: true when the index held everything stored
    /// before the search; false when the wait ran out first (recent puts
    /// may be missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed: Option<bool>,
}

impl From<Vec<SearchResult>> for SearchView {
    fn from(results: Vec<SearchResult>) -> Self {
        Self {
            results: results.into_iter().map(Into::into).collect(),
            indexed: None,
        }
    }
}
