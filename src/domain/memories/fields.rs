//! Validation of the descriptive fields a client gives at put ([`PutFields`]).

use crate::domain::DomainError;
use crate::model::PutFields;
use crate::model::put::rules::{
    MAX_TAGS, MIME_MAX_CHARS, TAG_MAX_CHARS, TEXT_FIELDS, TYPE_MAX_CHARS,
};
use crate::storage::meta::MemoryFields;

/// Type given when the client names none.
pub const DEFAULT_TYPE: &str = "TOOL_OUTPUT";
/// Media type given when the client names none.
pub const DEFAULT_MIME: &str = "text/plain";

pub use crate::model::put::rules::MAX_TTL_SECONDS;

/// The domain's side of the put fields every surface declares with
/// [`PutFields`]: what makes them valid.
impl PutFields {
    /// Checks every field, naming the first one that is wrong.
    pub fn validate(self) -> Result<MemoryFields, DomainError> {
        let kind = match self.kind.filter(|k| !k.is_empty()) {
            None => DEFAULT_TYPE.to_owned(),
            Some(k) => {
                let k = k.to_ascii_uppercase();
                let ok = k.len() <= TYPE_MAX_CHARS
                    && k.starts_with(|c: char| c.is_ascii_uppercase())
                    && k.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if !ok {
                    return Err(DomainError::field(
                        "type",
                        "must be a letter followed by letters, digits or `_`, at most 32 (e.g. TOOL_OUTPUT, WEB_SCRAPE, FILE_LIST, TRANSCRIPT, DOCUMENT)",
                    ));
                }
                k
            }
        };
        let mime = match self.mime.filter(|m| !m.is_empty()) {
            None => DEFAULT_MIME.to_owned(),
            Some(m)
                if m.chars().count() <= MIME_MAX_CHARS
                    && m.contains('/')
                    && !m.chars().any(char::is_control) =>
            {
                m
            }
            Some(_) => {
                return Err(DomainError::field(
                    "mime",
                    "must be a media type such as text/plain (at most 128 characters)",
                ));
            }
        };
        // Counted as given (blank ones included), as the API documents it.
        if self.tags.len() > MAX_TAGS {
            return Err(DomainError::field(
                "tags",
                format!("at most {MAX_TAGS} tags per memory"),
            ));
        }
        let mut tags = Vec::with_capacity(self.tags.len());
        for tag in self.tags {
            let tag = tag.trim().to_owned();
            if tag.is_empty() {
                continue;
            }
            if tag.chars().count() > TAG_MAX_CHARS
                || tag.contains(',')
                || tag.chars().any(char::is_control)
            {
                return Err(DomainError::field(
                    "tags",
                    "each tag is at most 128 characters, without commas or control characters",
                ));
            }
            tags.push(tag);
        }
        tags.sort();
        tags.dedup();
        if self
            .ttl_seconds
            .is_some_and(|t| t == 0 || t > MAX_TTL_SECONDS)
        {
            return Err(DomainError::field(
                "ttl_seconds",
                format!("must be between 1 and {MAX_TTL_SECONDS} (ten years)"),
            ));
        }
        Ok(MemoryFields {
            kind,
            pinned: self.pinned.unwrap_or(false),
            ttl_seconds: self.ttl_seconds,
            subtype: text("subtype", self.subtype)?,
            mime,
            title: text("title", self.title)?,
            tags,
            thread: text("thread", self.thread)?,
            checkpoint: text("checkpoint", self.checkpoint)?,
            directory: text("directory", self.directory)?,
        })
    }
}

/// A free-text field, held to its longest length in [`TEXT_FIELDS`].
fn text(field: &'static str, value: Option<String>) -> Result<Option<String>, DomainError> {
    let max = TEXT_FIELDS
        .iter()
        .find(|(name, _)| *name == field)
        .map_or(0, |(_, max)| *max);
    match value {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) if v.chars().count() > max => Err(DomainError::field(
            field,
            format!("at most {max} characters"),
        )),
        Some(v) if v.chars().any(|c| c.is_control() && c != '\t') => Err(DomainError::field(
            field,
            "must not contain control characters",
        )),
        Some(v) => Ok(Some(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_normalisation() {
        let fields = PutFields {
            kind: Some("web_scrape".into()),
            tags: vec!["b".into(), " a ".into(), "b".into(), String::new()],
            ..PutFields::default()
        }
        .validate()
        .unwrap();
        assert_eq!(fields.kind, "WEB_SCRAPE");
        assert_eq!(fields.mime, DEFAULT_MIME);
        assert_eq!(fields.tags, ["a", "b"]);
    }

    #[test]
    fn bad_fields_are_named() {
        let err = PutFields {
            kind: Some("9lives".into()),
            ..PutFields::default()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().starts_with("type:"));
        let err = PutFields {
            mime: Some("plain".into()),
            ..PutFields::default()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().starts_with("mime:"));
        let err = PutFields {
            title: Some("x\u{0}".into()),
            ..PutFields::default()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().starts_with("title:"));
        for ttl in [0, MAX_TTL_SECONDS + 1] {
            let err = PutFields {
                ttl_seconds: Some(ttl),
                ..PutFields::default()
            }
            .validate()
            .unwrap_err();
            assert!(err.to_string().starts_with("ttl_seconds:"));
        }
    }
}
