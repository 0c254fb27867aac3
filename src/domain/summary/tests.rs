//! Unit tests of the summaries, one realistic sample per kind.
