//! A provider's stream as the client sees it, round after round: which
//! upstream events pass, wait or are renumbered, each round's answer rebuilt
//! in the non-streaming shape (so its calls can be read and answered), and
//! the closing events of the final round with usage summed over the rounds.
//! The HTTP side (`http::proxy::stream`) reads the upstream's bytes into
//! [`super::sse`] events, feeds them here and writes what comes out.

mod by_api;
mod filter;

pub use filter::{Filter, RoundAnswer};
