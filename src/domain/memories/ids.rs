//! Memory identifiers: full SHA-256 ids and the unique-prefix form clients may send.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::domain::DomainError;

/// Shortest prefix a client may use to name a memory (as git does).
pub const MIN_PREFIX_LEN: usize = 12;
/// Length of a full id: SHA-256 in lowercase hex.
pub const ID_LEN: usize = 64;

/// A full memory id: the SHA-256 of the content, 64 lowercase hex characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryId(String);

impl MemoryId {
    /// Builds an id from a finished SHA-256 digest.
    pub fn from_digest(digest: &[u8]) -> Self {
        Self(hex::encode(digest))
    }

    /// The id of the given content.
    pub fn of_content(content: &[u8]) -> Self {
        Self::from_digest(&Sha256::digest(content))
    }

    /// Trusted constructor for ids read back from our own stores.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// The id as lowercase hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `mem://` pointer of the whole memory.
    pub fn uri(&self) -> String {
        format!("mem://{}", self.0)
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemoryId({})", &self.0)
    }
}

/// What a client wrote to name a memory: a full id or a unique hex prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdRef {
    /// All 64 characters.
    Full(MemoryId),
    /// 12 to 63 lowercase hex characters, to be resolved against the namespace.
    Prefix(String),
}

impl IdRef {
    /// Validates an id or prefix: hex only, 12 to 64 characters; case is ignored.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        let lower = text.to_ascii_lowercase();
        if !lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(DomainError::InvalidId(format!(
                "`{}` is not a memory id: ids are hex (SHA-256) or a hex prefix of at least {MIN_PREFIX_LEN} characters",
                clip(text)
            )));
        }
        match lower.len() {
            ID_LEN => Ok(Self::Full(MemoryId(lower))),
            n if (MIN_PREFIX_LEN..ID_LEN).contains(&n) => Ok(Self::Prefix(lower)),
            n if n < MIN_PREFIX_LEN => Err(DomainError::InvalidId(format!(
                "id prefix `{lower}` is too short: give at least {MIN_PREFIX_LEN} hex characters"
            ))),
            _ => Err(DomainError::InvalidId(format!(
                "`{}` is longer than a {ID_LEN}-character id",
                clip(text)
            ))),
        }
    }
}

/// Shortens client text quoted back in an error message.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_ids_and_prefixes_are_told_apart() {
        let full = "A".repeat(64);
        assert!(
            matches!(IdRef::parse(&full), Ok(IdRef::Full(id)) if id.as_str() == "a".repeat(64))
        );
        assert!(matches!(IdRef::parse("0123456789ab"), Ok(IdRef::Prefix(_))));
        assert!(IdRef::parse("0123456789a").is_err());
        assert!(IdRef::parse(&"a".repeat(65)).is_err());
        assert!(IdRef::parse("0123456789ag").is_err());
        assert!(IdRef::parse("").is_err());
    }

    #[test]
    fn id_of_content_is_sha256_hex() {
        assert_eq!(
            MemoryId::of_content(b"").as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
