//! Storage backends behind traits: objects ([`blob`]) and metadata ([`meta`]).

pub mod blob;
pub mod cache;
pub mod meta;

/// A failure of a storage backend.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The disk (or bucket) is full.
    #[error("no space left for the object")]
    Full,
    /// An object the metadata refers to is missing.
    #[error("object {0} is missing from the blob store")]
    MissingObject(String),
    /// An object is shorter than its frame index says.
    #[error("object {0} is truncated")]
    Truncated(String),
    /// A file-system failure.
    #[error("I/O error: {0}")]
    Io(#[source] std::io::Error),
    /// A metadata-store failure.
    #[error("metadata store error: {0}")]
    Database(String),
    /// The backend is shutting down or unreachable.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Not the storage's failure but Cairn's own around it: a blocking task
    /// that panicked or was cancelled, a writer used after it failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl StorageError {
    /// An internal failure (see [`StorageError::Internal`]).
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }
}

impl From<std::io::Error> for StorageError {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::StorageFull {
            Self::Full
        } else {
            Self::Io(err)
        }
    }
}

impl From<sqlx::Error> for StorageError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            // SQLITE_FULL (13): the disk holding the database is full.
            sqlx::Error::Database(db) if db.code().as_deref() == Some("13") => Self::Full,
            sqlx::Error::PoolClosed | sqlx::Error::PoolTimedOut => {
                Self::Unavailable(err.to_string())
            }
            _ => Self::Database(err.to_string()),
        }
    }
}
