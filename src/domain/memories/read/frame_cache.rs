//! The in-process LRU of decoded frames, bounded by bytes: paging through a
//! memory, or many agents reading the same hot output, decodes each frame once.
//!
//! A key is the object's hash and the content offset where the frame starts;
//! the value is verified content from there on (a prefix of the frame, or all
//! of it). Content is immutable under its hash, so an entry can never be
//! stale; namespaces are checked before a reader is made, so an entry cannot
//! leak across them.

use std::sync::Arc;

use bytes::Bytes;

use crate::metrics::Metrics;

/// The metrics label of this layer.
const LAYER: &str = "frames";

/// Decoded frames shared by every reader of the process.
pub struct FrameCache {
    frames: Option<moka::sync::Cache<(String, u64), Bytes>>,
    metrics: Arc<Metrics>,
}

impl FrameCache {
    /// A cache of at most `max_bytes` of decoded content (0: off).
    pub fn new(max_bytes: u64, metrics: Arc<Metrics>) -> Self {
        let frames = (max_bytes > 0).then(|| {
            moka::sync::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|key: &(String, u64), value: &Bytes| {
                    u32::try_from(value.len() + key.0.len() + 64).unwrap_or(u32::MAX)
                })
                .build()
        });
        Self { frames, metrics }
    }

    /// At least `need` bytes (at most `frame_len`) of the content of object
    /// `hash` from `content_offset`, if cached.
    pub fn get(
        &self,
        hash: &str,
        content_offset: u64,
        need: usize,
        frame_len: usize,
    ) -> Option<Bytes> {
        let frames = self.frames.as_ref()?;
        let found = frames
            .get(&(hash.to_owned(), content_offset))
            .filter(|data| data.len() >= need.min(frame_len))
            .map(|data| data.slice(..data.len().min(frame_len)));
        self.metrics.cache(LAYER, found.is_some());
        found
    }

    /// Keeps `data`, verified content of `hash` from `content_offset`, unless
    /// a longer piece is cached already.
    pub fn insert(&self, hash: &str, content_offset: u64, data: Bytes) {
        let Some(frames) = &self.frames else {
            return;
        };
        let key = (hash.to_owned(), content_offset);
        if frames
            .get(&key)
            .is_none_or(|cached| cached.len() < data.len())
        {
            frames.insert(key, data);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_a_long_enough_piece_clipped_to_the_frame() {
        let cache = FrameCache::new(1 << 20, Arc::new(Metrics::new()));
        cache.insert("ab", 0, Bytes::from_static(b"0123456789"));
        assert_eq!(cache.get("ab", 0, 4, 10).unwrap(), "0123456789");
        assert_eq!(
            cache.get("ab", 0, 4, 6).unwrap(),
            "012345",
            "clipped to the frame"
        );
        assert!(
            cache.get("ab", 0, 11, 20).is_none(),
            "too short for the need"
        );
        assert!(cache.get("ab", 10, 1, 10).is_none(), "another frame");
        assert!(cache.get("cd", 0, 1, 10).is_none(), "another object");
        cache.insert("ab", 0, Bytes::from_static(b"0123"));
        assert_eq!(
            cache.get("ab", 0, 4, 10).unwrap().len(),
            10,
            "a shorter piece never replaces a longer one"
        );
    }

    #[test]
    fn zero_bytes_turns_it_off() {
        let cache = FrameCache::new(0, Arc::new(Metrics::new()));
        cache.insert("ab", 0, Bytes::from_static(b"0123"));
        assert!(cache.get("ab", 0, 1, 4).is_none());
    }
}
