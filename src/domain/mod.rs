//! The domain: memories, slicing, summaries, pointers. No HTTP, no SQL here.

pub mod access;
pub mod compress;
pub mod content;
mod error;
pub mod fields;
pub mod frame_cache;
pub mod gc;
pub mod governor;
pub mod ids;
pub mod ingest;
pub mod ledger;
pub mod memories;
pub mod portable;
pub mod pricing;
pub mod reader;
pub mod redact;
pub mod retention;
pub mod search;
pub mod seekable;
pub mod slicing;
pub mod summarizer;
pub mod summary;
pub mod tokens;
pub mod uri;
pub mod verify;

pub use error::DomainError;

/// Current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
