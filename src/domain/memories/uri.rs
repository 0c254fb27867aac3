//! `mem://` pointer URIs: the whole memory, a line range or a byte range.

use crate::domain::DomainError;
use crate::domain::memories::ids::IdRef;

/// A parsed pointer: which memory, which part of it, and an optional token
/// budget for the slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemUri {
    /// The memory, as a full id or a unique prefix.
    pub id: IdRef,
    /// The part the pointer names.
    pub selector: Selector,
    /// `max_tokens=<n>`: serve the longest run of lines from the start of the
    /// selector that fits `n` tokens (a byte range's `len` is then ignored).
    pub max_tokens: Option<u64>,
}

/// The part of a memory a pointer names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// `mem://<id>`: the memory as a whole (served as its first lines).
    Whole,
    /// `mem://<id>#L<start>-<end>` (1-based, inclusive), `#L<start>` (one
    /// line) or `#L<start>-` (from `start` on).
    Lines { start: u64, end: Option<u64> },
    /// `mem://<id>?offset=<n>&len=<n>`.
    Bytes { offset: u64, len: Option<u64> },
}

impl MemUri {
    /// Parses `mem://<id>[?<query>][#L<a>[-[<b>]]]`, where the query holds
    /// `offset=<n>[&len=<n>]` (a byte range, not beside a line fragment)
    /// and/or `max_tokens=<n>`.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        let invalid = |why: &str| {
            DomainError::InvalidUri(format!(
                "`{}` is not a pointer URI: {why} (expected mem://<id>, mem://<id>#L<start>-<end>, mem://<id>?offset=<n>&len=<n>, optionally with max_tokens=<n> in the query)",
                text.chars().take(120).collect::<String>()
            ))
        };
        let rest = text
            .strip_prefix("mem://")
            .ok_or_else(|| invalid("it must start with mem://"))?;
        let (head, fragment) = match rest.split_once('#') {
            Some((head, fragment)) => (head, Some(fragment)),
            None => (rest, None),
        };
        let (id_part, query) = match head.split_once('?') {
            Some((id, query)) => (id, parse_query(query).ok_or_else(|| invalid("bad query"))?),
            None => (head, Query::default()),
        };
        let selector = match (fragment, query.offset) {
            (Some(_), Some(_)) => {
                return Err(invalid("a line fragment and a byte offset together"));
            }
            (Some(fragment), None) => {
                parse_lines(fragment).ok_or_else(|| invalid("bad line fragment"))?
            }
            (None, Some(offset)) => Selector::Bytes {
                offset,
                len: query.len,
            },
            (None, None) if query.len.is_some() => return Err(invalid("`len` without `offset`")),
            (None, None) => Selector::Whole,
        };
        let id = IdRef::parse(id_part.trim_end_matches('/'))?;
        Ok(Self {
            id,
            selector,
            max_tokens: query.max_tokens,
        })
    }
}

fn parse_lines(fragment: &str) -> Option<Selector> {
    let body = fragment.strip_prefix('L')?;
    let (start, end) = match body.split_once('-') {
        Some((a, "")) => (a, None),
        Some((a, b)) => (a, Some(b.strip_prefix('L').unwrap_or(b))),
        None => (body, Some(body)),
    };
    let start = start.parse().ok()?;
    let end = match end {
        Some(b) => Some(b.parse().ok()?),
        None => None,
    };
    Some(Selector::Lines { start, end })
}

#[derive(Default)]
struct Query {
    offset: Option<u64>,
    len: Option<u64>,
    max_tokens: Option<u64>,
}

fn parse_query(query: &str) -> Option<Query> {
    let mut parsed = Query::default();
    if query.is_empty() {
        return None;
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=')?;
        let value: u64 = value.parse().ok()?;
        let slot = match key {
            "offset" => &mut parsed.offset,
            "len" | "length" => &mut parsed.len,
            "max_tokens" => &mut parsed.max_tokens,
            _ => return None,
        };
        *slot = Some(value);
    }
    Some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parses_every_form() {
        let whole = MemUri::parse(&format!("mem://{ID}")).unwrap();
        assert_eq!(whole.selector, Selector::Whole);
        let lines = MemUri::parse(&format!("mem://{ID}#L10-20")).unwrap();
        assert_eq!(
            lines.selector,
            Selector::Lines {
                start: 10,
                end: Some(20)
            }
        );
        let github = MemUri::parse(&format!("mem://{ID}#L10-L20")).unwrap();
        assert_eq!(github.selector, lines.selector);
        let one = MemUri::parse(&format!("mem://{ID}#L7")).unwrap();
        assert_eq!(
            one.selector,
            Selector::Lines {
                start: 7,
                end: Some(7)
            }
        );
        let bytes = MemUri::parse(&format!("mem://{ID}?offset=5&len=9")).unwrap();
        assert_eq!(
            bytes.selector,
            Selector::Bytes {
                offset: 5,
                len: Some(9)
            }
        );
        let open = MemUri::parse(&format!("mem://{ID}?max_tokens=500#L41-")).unwrap();
        assert_eq!(
            (open.selector, open.max_tokens),
            (
                Selector::Lines {
                    start: 41,
                    end: None
                },
                Some(500)
            )
        );
        let inside = MemUri::parse(&format!("mem://{ID}?offset=7&max_tokens=64")).unwrap();
        assert_eq!(
            (inside.selector, inside.max_tokens),
            (
                Selector::Bytes {
                    offset: 7,
                    len: None
                },
                Some(64)
            )
        );
        let budget_only = MemUri::parse(&format!("mem://{ID}?max_tokens=64")).unwrap();
        assert_eq!(budget_only.selector, Selector::Whole);
        let prefix = MemUri::parse("mem://e3b0c44298fc#L1-2").unwrap();
        assert!(matches!(prefix.id, IdRef::Prefix(_)));
    }

    #[test]
    fn rejects_malformed_pointers() {
        for bad in [
            "http://x",
            "mem://",
            "mem://xyz",
            &format!("mem://{ID}#10-20"),
            &format!("mem://{ID}#La-b"),
            &format!("mem://{ID}?len=5"),
            &format!("mem://{ID}?offset=x"),
            &format!("mem://{ID}?offset=1&foo=2"),
            &format!("mem://{ID}?offset=1#L2-3"),
            &format!("mem://{ID}?max_tokens=x#L2"),
        ] {
            assert!(MemUri::parse(bad).is_err(), "{bad} should be rejected");
        }
    }
}
