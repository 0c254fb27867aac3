//! Which memories a request is about: the filter every listing-like surface
//! takes (REST's list, search and grep across, MCP's `memory_search`, the
//! CLI's `list` and `search`), declared once so that their names, meaning and
//! help cannot drift apart. serde, utoipa (query parameters), schemars (MCP
//! tool arguments) and clap (flags) all derive from this declaration.

use macro_rules_attribute::apply;

/// What `since` and `until` accept, as a regular expression (the OpenAPI
/// document's `pattern`, and the server's first check): Unix seconds (1 to
/// 12 digits), or an RFC 3339 time of a real calendar day (`T`, an optional
/// fraction of up to 9 digits, `Z` or an offset).
pub const TIME_PATTERN: &str = concat!(
    "^(?:[0-9]{1,12}|",
    "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])",
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)",
    "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:[.][0-9]{1,9})?",
    "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]))$"
);

/// The memories a request selects: every given field must match.
#[apply(surface_noun!)]
pub struct MemoryFilter {
    /// Only this type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    #[arg(long = "type")]
    pub kind: Option<String>,
    /// Only this subtype.
    #[arg(long)]
    pub subtype: Option<String>,
    /// Only memories with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Only this thread.
    #[arg(long)]
    pub thread: Option<String>,
    /// Only this checkpoint.
    #[arg(long)]
    pub checkpoint: Option<String>,
    /// Only this directory.
    #[arg(long)]
    pub directory: Option<String>,
    /// Created at or after (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub since: Option<String>,
    /// Created before (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub until: Option<String>,
}

impl MemoryFilter {
    /// The filter with blank fields dropped: an HTML form sends every field,
    /// and an empty one means no filter.
    pub fn given_only(self) -> Self {
        let given = |field: Option<String>| field.filter(|text| !text.trim().is_empty());
        Self {
            kind: given(self.kind),
            subtype: given(self.subtype),
            tag: given(self.tag),
            thread: given(self.thread),
            checkpoint: given(self.checkpoint),
            directory: given(self.directory),
            since: given(self.since),
            until: given(self.until),
        }
    }

    /// The fields given, as query-string pairs named as on the wire, in
    /// declaration order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        serde_urlencoded::to_string(self)
            .ok()
            .and_then(|query| serde_urlencoded::from_str(&query).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_carry_the_wire_names_of_the_given_fields() {
        let filter = MemoryFilter {
            kind: Some("TOOL_OUTPUT".into()),
            since: Some("1700000000".into()),
            ..MemoryFilter::default()
        };
        assert_eq!(
            filter.pairs(),
            vec![
                ("type".to_owned(), "TOOL_OUTPUT".to_owned()),
                ("since".to_owned(), "1700000000".to_owned())
            ]
        );
    }

    #[test]
    fn blank_fields_are_no_filter() {
        let filter = MemoryFilter {
            tag: Some("  ".into()),
            thread: Some("t1".into()),
            ..MemoryFilter::default()
        }
        .given_only();
        assert_eq!(filter.tag, None);
        assert_eq!(filter.thread.as_deref(), Some("t1"));
    }

    #[test]
    fn the_query_string_reads_into_the_same_fields() {
        let filter: MemoryFilter =
            serde_urlencoded::from_str("type=LOG&checkpoint=c2&until=2026-01-31T12:00:00Z")
                .unwrap();
        assert_eq!(filter.kind.as_deref(), Some("LOG"));
        assert_eq!(filter.checkpoint.as_deref(), Some("c2"));
        assert_eq!(filter.until.as_deref(), Some("2026-01-31T12:00:00Z"));
    }
}
