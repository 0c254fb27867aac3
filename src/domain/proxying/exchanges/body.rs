//! What the model saw, stored as a delta: a conversation's request bodies
//! share their beginning (the history, byte-stable) and often their end (the
//! tools, the settings), so each exchange keeps only the bytes between,
//! against the thread's previous exchange.

use std::collections::HashMap;

use crate::storage::meta::ExchangeRow;

/// A body as the bytes it shares with its parent's and those it adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// Bytes taken from the start of the parent's body.
    pub prefix: usize,
    /// Bytes taken from the end of the parent's body.
    pub suffix: usize,
    /// The bytes between.
    pub middle: Vec<u8>,
}

impl Delta {
    /// The whole of `body` (no parent).
    pub fn whole(body: &[u8]) -> Self {
        Self {
            prefix: 0,
            suffix: 0,
            middle: body.to_vec(),
        }
    }

    /// `body` against `parent`: the longest shared start, then the longest
    /// shared end of what is left of both.
    pub fn between(parent: &[u8], body: &[u8]) -> Self {
        let prefix = parent
            .iter()
            .zip(body)
            .position(|(a, b)| a != b)
            .unwrap_or(parent.len().min(body.len()));
        let (rest_parent, rest_body) = (&parent[prefix..], &body[prefix..]);
        let suffix = rest_parent
            .iter()
            .rev()
            .zip(rest_body.iter().rev())
            .position(|(a, b)| a != b)
            .unwrap_or(rest_parent.len().min(rest_body.len()));
        Self {
            prefix,
            suffix,
            middle: body[prefix..body.len() - suffix].to_vec(),
        }
    }

    /// The body, given its parent's; `None` when the parent is too short
    /// (not the body this delta was made against).
    pub fn apply(&self, parent: &[u8]) -> Option<Vec<u8>> {
        let tail = parent.len().checked_sub(self.suffix)?;
        if self.prefix > tail {
            return None;
        }
        let mut body = Vec::with_capacity(self.prefix + self.middle.len() + self.suffix);
        body.extend_from_slice(&parent[..self.prefix]);
        body.extend_from_slice(&self.middle);
        body.extend_from_slice(&parent[tail..]);
        Some(body)
    }
}

/// The body of exchange `id` rebuilt from `chain` (its thread's exchanges up
/// to it, with their deltas); `None` when a parent is missing.
pub fn rebuild(chain: Vec<ExchangeRow>, id: &str) -> Option<Vec<u8>> {
    let mut rows: HashMap<String, ExchangeRow> =
        chain.into_iter().map(|row| (row.id.clone(), row)).collect();
    let mut path = Vec::new();
    let mut next = Some(id.to_owned());
    while let Some(at) = next {
        let row = rows.remove(&at)?;
        next = row.parent.clone();
        path.push(row);
    }
    let mut body: Vec<u8> = Vec::new();
    for row in path.into_iter().rev() {
        let delta = Delta {
            prefix: usize::try_from(row.prefix).ok()?,
            suffix: usize::try_from(row.suffix).ok()?,
            middle: row.body,
        };
        body = delta.apply(&body)?;
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_keeps_the_shared_start_and_end() {
        let parent = br#"{"messages":[1,2],"tools":[9]}"#;
        let body = br#"{"messages":[1,2,3,4],"tools":[9]}"#;
        let delta = Delta::between(parent, body);
        assert_eq!(delta.middle, b",3,4");
        assert_eq!(delta.apply(parent).as_deref(), Some(&body[..]));
        // Equal bodies, a body that is a prefix, one that shrank, one that shares nothing.
        for other in [&parent[..], b"{\"messages\":[1", b"{}", b"xyz", b""] {
            let delta = Delta::between(parent, other);
            assert_eq!(delta.apply(parent).as_deref(), Some(other), "{other:?}");
            assert!(delta.prefix + delta.suffix <= parent.len().min(other.len()));
        }
        assert_eq!(Delta::between(b"aaa", b"aaaa").middle, b"a");
        assert_eq!(Delta::whole(b"xy").apply(b""), Some(b"xy".to_vec()));
        assert_eq!(Delta::between(parent, body).apply(b"short"), None);
    }

    fn row(id: &str, parent: Option<&str>, delta: &Delta) -> ExchangeRow {
        ExchangeRow {
            id: id.into(),
            namespace: "ns".into(),
            thread: "t".into(),
            api: "chat".into(),
            model: "m".into(),
            at_ms: 0,
            status: 200,
            parent: parent.map(Into::into),
            prefix: delta.prefix as i64,
            suffix: delta.suffix as i64,
            body: delta.middle.clone(),
            figures: "{}".into(),
        }
    }

    #[test]
    fn a_body_is_rebuilt_through_its_parents() {
        let bodies: [&[u8]; 3] = [b"[a]tools", b"[a,b]tools", b"[a,b,c]tools"];
        let first = Delta::whole(bodies[0]);
        let second = Delta::between(bodies[0], bodies[1]);
        let third = Delta::between(bodies[1], bodies[2]);
        let chain = vec![
            row("ex_1", None, &first),
            row("ex_2", Some("ex_1"), &second),
            row("ex_3", Some("ex_2"), &third),
        ];
        assert_eq!(rebuild(chain.clone(), "ex_3").as_deref(), Some(bodies[2]));
        assert_eq!(rebuild(chain.clone(), "ex_2").as_deref(), Some(bodies[1]));
        // A missing parent: not rebuilt (never a wrong body).
        assert_eq!(rebuild(chain[1..].to_vec(), "ex_3"), None);
    }
}
