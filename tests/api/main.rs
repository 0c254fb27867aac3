//! API tests: the real router, in-process, over temp data directories.

// Helpers outside #[test] functions unwrap too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod helpers;

mod admin;
mod auth;
mod bytes;
mod cache;
mod cache_meta;
mod compress;
mod console;
mod content;
mod errors;
mod fetch;
mod governor;
mod grep;
mod health;
mod ids;
mod integrity;
mod lines;
mod listing;
mod memories;
mod metrics;
mod openapi;
mod portable;
mod query;
mod redact;
mod safety;
mod search;
mod stats;
mod summaries;
mod token_slices;
mod tokens;
mod usage;
