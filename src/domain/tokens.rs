//! Token counts. Until exact BPE counting lands, counts are estimates and say so.

/// How [`estimate`] counts, reported beside every count.
pub const ESTIMATE_METHOD: &str = "estimate:bytes/4";

/// Estimated tokens of content of `bytes` bytes (about 4 bytes a token for English and code).
pub fn estimate(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}
