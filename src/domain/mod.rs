//! The domain: memories, slicing, summaries, pointers. No HTTP, no SQL here.

pub mod compress;
mod error;
pub mod foreground;
pub mod governor;
pub mod ledger;
pub mod maintenance;
pub mod memories;
pub mod portable;
pub mod proxying;
pub mod redact;
pub mod search;
pub mod summarizer;
pub mod summary;
pub mod tokens;

pub use error::DomainError;

/// Current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    crate::clock::now_ms()
}

/// Builds the tables every put and compress needs (the BPE dictionary of
/// o200k_base and its pre-tokenizer's Unicode classes, redaction patterns,
/// summary finders) so that the first request
/// does not pay for them: loading o200k_base alone takes ~75 ms. Blocking;
/// the server runs it on the blocking pool while it opens its stores.
///
/// cl100k_base (gpt-4 and gpt-3.5 only) is left to its first use: its tables
/// take ~35 MB of memory that most deployments never need.
pub fn warm_up() {
    // Beyond ASCII too: the pre-tokenizer's Unicode classes are built at first use.
    let sample =
        "{\"warm\": \"up — café\"}\nERROR password=hunter2 at https://user:pw@example.com/\n";
    tokens::stream::CONTENT_ENCODING.count(sample);
    let (redacted, _) = redact::redact_text(sample);
    let facts = summary::SummaryFacts {
        mime: "text/plain".to_owned(),
        bytes: redacted.len() as u64,
        ..summary::SummaryFacts::default()
    };
    summary::summarize(redacted.as_bytes(), &facts, 800);
}
