//! What a client may say about content it stores: the descriptive fields of
//! a put, declared once for REST (query parameters of a raw upload, the JSON
//! body), MCP's `memory_put` and the CLI's `cairn put`. The domain validates
//! them (`domain::memories::fields`).

use macro_rules_attribute::apply;
use serde::{Deserialize, Deserializer, Serializer};

/// The fields a put may carry beside its content; all optional.
#[apply(surface_noun!)]
pub struct PutFields {
    /// TOOL_OUTPUT (default), WEB_SCRAPE, FILE_LIST, TRANSCRIPT, SUMMARY, CONTEXT, DOCUMENT, ...
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[param(rename = "type")]
    #[arg(long = "type")]
    pub kind: Option<String>,
    /// Usually the name of the tool that produced the content, e.g. `pytest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub subtype: Option<String>,
    /// Media type of the content (default: a raw upload's Content-Type, else text/plain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub mime: Option<String>,
    /// A short title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub title: Option<String>,
    /// Tags to filter by later (comma-separated in a query string; `--tag` each in the CLI).
    #[serde(
        default,
        deserialize_with = "list_or_commas",
        serialize_with = "commas",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[param(value_type = Option<String>)]
    #[schema(value_type = Vec<String>)]
    #[schemars(with = "Vec<String>")]
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// The conversation thread or session this belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub thread: Option<String>,
    /// The checkpoint this belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub checkpoint: Option<String>,
    /// The working directory this belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub directory: Option<String>,
    /// Seconds until the memory expires (1 to ten years; default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub ttl_seconds: Option<u64>,
    /// Never prune nor expire this memory (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub pinned: Option<bool>,
}

/// The rules each put field is held to, stated once: the domain validates
/// by them (`domain::memories::fields`) and the OpenAPI document writes
/// them as each field's `maxLength`, `pattern` and bounds.
pub mod rules {
    /// Fields of free text (no control character but tab), with their longest length in characters.
    pub const TEXT_FIELDS: [(&str, usize); 5] = [
        ("subtype", 128),
        ("title", 512),
        ("thread", 1024),
        ("checkpoint", 1024),
        ("directory", 4096),
    ];
    /// Free text: no control character (Unicode `Cc`) but tab.
    pub const TEXT_PATTERN: &str = "^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F-\\u009F]*$";
    /// A type: a letter, then letters, digits or `_`, at most 32 (upper-cased when stored); empty: the default.
    pub const TYPE_PATTERN: &str = "^([A-Za-z][A-Za-z0-9_]{0,31})?$";
    /// Longest type.
    pub const TYPE_MAX_CHARS: usize = 32;
    /// A media type: a `/` and no control character; empty: the default.
    pub const MIME_PATTERN: &str =
        "^$|^[^\\u0000-\\u001F\\u007F-\\u009F]*/[^\\u0000-\\u001F\\u007F-\\u009F]*$";
    /// Longest media type, in characters.
    pub const MIME_MAX_CHARS: usize = 128;
    /// Most tags one put may give (blank ones count).
    pub const MAX_TAGS: usize = 64;
    /// Longest tag, in characters.
    pub const TAG_MAX_CHARS: usize = 128;
    /// One tag: no comma, no control character, at most 128 characters.
    pub const TAG_PATTERN: &str = "^[^,\\u0000-\\u001F\\u007F-\\u009F]{0,128}$";
    /// Tags in a query string: up to 64, comma-separated.
    pub const TAGS_PATTERN: &str = "^[^,\\u0000-\\u001F\\u007F-\\u009F]{0,128}(,[^,\\u0000-\\u001F\\u007F-\\u009F]{0,128}){0,63}$";
    /// Longest `ttl_seconds`: ten years.
    pub const MAX_TTL_SECONDS: u64 = 10 * 365 * 86_400;
}

impl PutFields {
    /// These fields, each missing one taken from `fallback` (a JSON put's
    /// own fields first, then its query string's).
    pub fn or(self, fallback: Self) -> Self {
        Self {
            kind: self.kind.or(fallback.kind),
            subtype: self.subtype.or(fallback.subtype),
            mime: self.mime.or(fallback.mime),
            title: self.title.or(fallback.title),
            tags: if self.tags.is_empty() {
                fallback.tags
            } else {
                self.tags
            },
            thread: self.thread.or(fallback.thread),
            checkpoint: self.checkpoint.or(fallback.checkpoint),
            directory: self.directory.or(fallback.directory),
            ttl_seconds: self.ttl_seconds.or(fallback.ttl_seconds),
            pinned: self.pinned.or(fallback.pinned),
        }
    }
}

/// Tags as a list, or as one comma-separated string (a query string's form).
/// Blank ones are left for validation to drop.
fn list_or_commas<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Tags {
        List(Vec<String>),
        Commas(String),
    }
    Ok(match Option::<Tags>::deserialize(deserializer)? {
        None => Vec::new(),
        Some(Tags::List(tags)) => tags,
        Some(Tags::Commas(text)) => text.split(',').map(str::to_owned).collect(),
    })
}

/// Tags as one comma-separated string, as a query string carries them.
fn commas<S: Serializer>(tags: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&tags.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_come_as_a_list_or_comma_separated() {
        let json: PutFields = serde_json::from_str(r#"{"tags": ["a", " b"]}"#).unwrap();
        assert_eq!(json.tags, ["a", " b"]);
        let query: PutFields = serde_urlencoded::from_str("tags=a,%20b,,c&type=LOG").unwrap();
        assert_eq!(query.tags, ["a", " b", "", "c"]);
        assert_eq!(query.kind.as_deref(), Some("LOG"));
        let none: PutFields = serde_json::from_str(r#"{"tags": null}"#).unwrap();
        assert!(none.tags.is_empty());
        assert!(serde_json::from_str::<PutFields>(r#"{"tags": 3}"#).is_err());
    }

    #[test]
    fn a_query_string_carries_back_what_it_was_read_from() {
        let fields = PutFields {
            kind: Some("LOG".into()),
            tags: vec!["a".into(), "b".into()],
            ttl_seconds: Some(60),
            ..PutFields::default()
        };
        let query = serde_urlencoded::to_string(&fields).unwrap();
        assert_eq!(query, "type=LOG&tags=a%2Cb&ttl_seconds=60");
        assert_eq!(
            serde_urlencoded::from_str::<PutFields>(&query).unwrap(),
            fields
        );
    }

    #[test]
    fn a_json_put_s_own_fields_come_before_its_query_s() {
        let body = PutFields {
            title: Some("body".into()),
            ..PutFields::default()
        };
        let query = PutFields {
            title: Some("query".into()),
            thread: Some("t".into()),
            tags: vec!["q".into()],
            ..PutFields::default()
        };
        let merged = body.or(query);
        assert_eq!(merged.title.as_deref(), Some("body"));
        assert_eq!(merged.thread.as_deref(), Some("t"));
        assert_eq!(merged.tags, ["q"]);
    }
}
