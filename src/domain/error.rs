//! Errors of the domain layer; the HTTP layer maps each to a status and a JSON body.

use crate::storage::StorageError;

/// Everything a domain operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The text given as an id is not one.
    #[error("{0}")]
    InvalidId(String),
    /// A prefix matches more than one memory of the namespace.
    #[error("id prefix `{0}` matches more than one memory: give more characters")]
    AmbiguousId(String),
    /// No memory with this id (or prefix) in the caller's namespace.
    #[error("no memory `{0}` in this namespace")]
    NotFound(String),
    /// A pointer URI that does not parse.
    #[error("{0}")]
    InvalidUri(String),
    /// A range outside the content or malformed.
    #[error("{0}")]
    InvalidRange(String),
    /// A slice larger than the configured guardrail.
    #[error("{message}")]
    SliceTooLarge {
        /// Which limit (`max_slice_lines` or `max_slice_bytes`).
        limit: &'static str,
        /// The configured maximum.
        max: u64,
        /// What was asked for.
        requested: u64,
        /// A sentence for the client.
        message: String,
    },
    /// A field of the request is not acceptable.
    #[error("{field}: {message}")]
    InvalidField {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A message list (compress, governor, tokens) has a bad shape at `path`.
    #[error("{path}: {message}")]
    InvalidMessages {
        /// Where, e.g. `messages[3].content`.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// The upload is larger than allowed.
    #[error("content exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The configured maximum in bytes.
        limit: u64,
    },
    /// Reading the request body failed (client went away, bad chunking, ...).
    #[error("could not read the request body: {0}")]
    Body(String),
    /// Stored data failed its checksum or hash: never served as content.
    #[error("memory {id} is corrupt: {detail}")]
    Corrupt {
        /// The memory (content hash) whose object failed verification.
        id: String,
        /// Which check failed.
        detail: String,
    },
    /// The namespace's daily token or cost budget is spent.
    #[error("{message}")]
    BudgetExceeded {
        /// Which budget: `tokens` or `cost_usd`.
        budget: &'static str,
        /// The daily limit.
        limit: f64,
        /// What was spent today.
        spent: f64,
        /// When the budget resets (the next UTC midnight).
        resets_at: chrono::DateTime<chrono::Utc>,
        /// Seconds until then.
        retry_after_secs: u64,
        /// A sentence for the client.
        message: String,
    },
    /// An import archive that cannot be restored (bad entry, hash mismatch, missing object).
    #[error("{item}: {message}")]
    InvalidArchive {
        /// The archive entry or memory at fault.
        item: String,
        /// What is wrong with it.
        message: String,
    },
    /// A search query that cannot be translated (the reason for the client).
    #[error("invalid search query: {0}")]
    InvalidQuery(String),
    /// The request is well formed but the content cannot take it (jq on
    /// text that is not JSON, a program that hits its limits).
    #[error("{message}")]
    Unprocessable {
        /// The error code for the client (`not_json`, `jq_error`, `query_limit`, ...).
        code: &'static str,
        /// A sentence for the client.
        message: String,
    },
    /// A storage backend failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Something that is not a storage failure went wrong inside the service
    /// (a worker thread panicked or stopped): a 500 whose cause is logged, not sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl DomainError {
    /// An internal failure (a panicked or stopped worker, a join error).
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }

    /// Shorthand for an invalid field.
    pub fn field(field: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidField {
            field,
            message: message.into(),
        }
    }
}
