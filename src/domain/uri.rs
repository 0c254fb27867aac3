//! `mem://` pointer URIs: the whole memory, a line range or a byte range.

use super::DomainError;
use super::ids::IdRef;

/// A parsed pointer: which memory, and which part of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemUri {
    /// The memory, as a full id or a unique prefix.
    pub id: IdRef,
    /// The part the pointer names.
    pub selector: Selector,
}

/// The part of a memory a pointer names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// `mem://<id>`: the memory as a whole (served as its first lines).
    Whole,
    /// `mem://<id>#L<start>-<end>` (1-based, inclusive) or `#L<start>`.
    Lines { start: u64, end: Option<u64> },
    /// `mem://<id>?offset=<n>&len=<n>`.
    Bytes { offset: u64, len: Option<u64> },
}

impl MemUri {
    /// Parses `mem://<id>[#L<a>[-<b>]]` or `mem://<id>?offset=<n>[&len=<n>]`.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        let invalid = |why: &str| {
            DomainError::InvalidUri(format!(
                "`{}` is not a pointer URI: {why} (expected mem://<id>, mem://<id>#L<start>-<end> or mem://<id>?offset=<n>&len=<n>)",
                text.chars().take(120).collect::<String>()
            ))
        };
        let rest = text
            .strip_prefix("mem://")
            .ok_or_else(|| invalid("it must start with mem://"))?;
        let (id_part, selector) = if let Some((id, fragment)) = rest.split_once('#') {
            (
                id,
                parse_lines(fragment).ok_or_else(|| invalid("bad line fragment"))?,
            )
        } else if let Some((id, query)) = rest.split_once('?') {
            (
                id,
                parse_bytes(query).ok_or_else(|| invalid("bad byte range query"))?,
            )
        } else {
            (rest, Selector::Whole)
        };
        let id = IdRef::parse(id_part.trim_end_matches('/'))?;
        Ok(Self { id, selector })
    }
}

fn parse_lines(fragment: &str) -> Option<Selector> {
    let body = fragment.strip_prefix('L')?;
    let (start, end) = match body.split_once('-') {
        Some((a, b)) => (a, Some(b.strip_prefix('L').unwrap_or(b))),
        None => (body, None),
    };
    let start = start.parse().ok()?;
    let end = match end {
        Some(b) => Some(b.parse().ok()?),
        None => Some(start),
    };
    Some(Selector::Lines { start, end })
}

fn parse_bytes(query: &str) -> Option<Selector> {
    let mut offset = None;
    let mut len = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=')?;
        let value: u64 = value.parse().ok()?;
        match key {
            "offset" => offset = Some(value),
            "len" | "length" => len = Some(value),
            _ => return None,
        }
    }
    Some(Selector::Bytes {
        offset: offset?,
        len,
    })
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
        ] {
            assert!(MemUri::parse(bad).is_err(), "{bad} should be rejected");
        }
    }
}
