//! What the exchange ledger remembers of each thread between its requests:
//! the last exchange (the parent of the next one's body delta), the body it
//! sent upstream, and the client's request reduced to a [`Profile`] with its
//! modelled untouched input (for the next counterfactual). Bounded by the
//! bytes of the bodies held; a thread forgotten starts a new chain.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use moka::sync::Cache;

use super::body::Delta;
use super::cost::{Previous, Profile};

/// A thread's bodies chain at most this many deltas before a whole body
/// starts a new chain (rebuilding one stays bounded).
const MAX_CHAIN: usize = 50;

/// A thread left alone this long is forgotten.
const IDLE: Duration = Duration::from_secs(2 * 60 * 60);

/// A thread's state after its latest exchange.
struct Thread {
    last_id: String,
    chain: usize,
    upstream: Arc<Vec<u8>>,
    /// The latest exchange's client request and start.
    profile: Profile,
    at_ms: i64,
    /// The memories the latest exchange's request had taken out.
    pieces: Arc<HashSet<String>>,
    /// The latest finished exchange: its client request, modelled untouched input and start.
    finished: Option<(Profile, u64, i64)>,
}

/// Where a new exchange stands in its thread.
pub struct Placed {
    /// Its id, taken under the thread's lock: a parent's id is below its child's.
    pub id: String,
    /// The exchange its body is a delta against.
    pub parent: Option<String>,
    /// Its body against the parent's.
    pub delta: Delta,
    /// The thread's previous untouched request, if known.
    pub previous: Option<Previous>,
    /// The memories the thread's previous exchange had taken out already.
    pub earlier_pieces: Arc<HashSet<String>>,
}

/// Locks that place one thread's exchanges one at a time (by key hash).
const STRIPES: usize = 64;

/// Every thread's state, bounded in bytes.
pub struct Threads {
    cache: Cache<(String, String), Arc<Mutex<Thread>>>,
    stripes: [Mutex<()>; STRIPES],
}

impl Threads {
    /// Holds at most `max_bytes` of request bodies.
    pub fn new(max_bytes: u64) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|_, thread: &Arc<Mutex<Thread>>| {
                    let bytes = lock(thread).upstream.len();
                    u32::try_from(bytes.saturating_add(256)).unwrap_or(u32::MAX)
                })
                .time_to_idle(IDLE)
                .build(),
            stripes: std::array::from_fn(|_| Mutex::new(())),
        }
    }

    /// Places a new exchange of the thread `key` (its body `upstream`, its
    /// client's request `profile`, the memories it takes out, its start)
    /// after the thread's latest, under a new id `new_id` makes.
    pub fn place(
        &self,
        key: (String, String),
        new_id: impl FnOnce() -> String,
        upstream: Vec<u8>,
        profile: Profile,
        pieces: HashSet<String>,
        at_ms: i64,
    ) -> Placed {
        let stripe = {
            use std::hash::{BuildHasher, RandomState};
            static HASHER: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
            let hash = HASHER.get_or_init(RandomState::new).hash_one(&key);
            &self.stripes[(hash % STRIPES as u64) as usize]
        };
        let _one_at_a_time = stripe.lock().unwrap_or_else(PoisonError::into_inner);
        let id = new_id();
        let upstream = Arc::new(upstream);
        let earlier = self.cache.get(&key);
        let before = earlier.as_deref().map(lock);
        let finished = before.as_ref().and_then(|b| b.finished.clone());
        let earlier_pieces = before
            .as_ref()
            .map(|b| b.pieces.clone())
            .unwrap_or_default();
        let previous = finished.as_ref().map(|(earlier, input, started)| Previous {
            input: *input,
            shared: profile.shared_with(earlier),
            age_ms: at_ms - started,
        });
        let (parent, delta, chain) = match &before {
            Some(b) if b.chain < MAX_CHAIN => (
                Some(b.last_id.clone()),
                Delta::between(&b.upstream, &upstream),
                b.chain + 1,
            ),
            _ => (None, Delta::whole(&upstream), 0),
        };
        drop(before);
        let placed = Placed {
            id: id.clone(),
            parent,
            delta,
            previous,
            earlier_pieces,
        };
        let thread = Thread {
            last_id: id,
            chain,
            upstream,
            profile,
            at_ms,
            pieces: Arc::new(pieces),
            finished,
        };
        self.cache.insert(key, Arc::new(Mutex::new(thread)));
        placed
    }

    /// Records the untouched input of exchange `id`, if it is still its
    /// thread's latest (an earlier one finishing late changes nothing).
    pub fn finished(&self, key: &(String, String), id: &str, untouched: Option<u64>) {
        if let Some(thread) = self.cache.get(key) {
            let mut thread = lock(&thread);
            if thread.last_id == id
                && let Some(input) = untouched
            {
                thread.finished = Some((thread.profile.clone(), input, thread.at_ms));
            }
        }
    }
}

fn lock(thread: &Mutex<Thread>) -> std::sync::MutexGuard<'_, Thread> {
    thread.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pieces(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    fn key() -> (String, String) {
        ("ns".into(), "t".into())
    }

    #[test]
    fn each_exchange_is_a_delta_of_the_threads_previous() {
        let threads = Threads::new(1 << 20);
        let profile = |n: usize| Profile::of(&json!({"messages": vec![1; n]}), "messages");
        let first = threads.place(
            key(),
            || "ex_1".into(),
            b"[1]".to_vec(),
            profile(1),
            pieces(&["a"]),
            0,
        );
        assert_eq!((first.parent, first.previous), (None, None));
        threads.finished(&key(), "ex_1", Some(1_000));
        let second = threads.place(
            key(),
            || "ex_2".into(),
            b"[1,1]".to_vec(),
            profile(2),
            pieces(&["a", "b"]),
            500,
        );
        assert_eq!(second.parent.as_deref(), Some("ex_1"));
        assert_eq!(second.delta.middle, b",1");
        assert_eq!(*second.earlier_pieces, pieces(&["a"]));
        let previous = second.previous.unwrap_or_else(|| panic!("no previous"));
        assert_eq!(
            (previous.input, previous.shared, previous.age_ms),
            (1_000, 1.0, 500)
        );
        // An exchange that has not finished when the next begins: the
        // latest finished one stands for it; one finishing late changes nothing.
        let third = threads.place(
            key(),
            || "ex_3".into(),
            b"[1,1,1]".to_vec(),
            profile(3),
            pieces(&[]),
            600,
        );
        assert_eq!(third.previous.map(|p| p.input), Some(1_000));
        threads.finished(&key(), "ex_2", Some(2_000));
        let fourth = threads.place(
            key(),
            || "ex_4".into(),
            b"[1,1,1,1]".to_vec(),
            profile(4),
            pieces(&[]),
            700,
        );
        assert_eq!(
            fourth.previous.map(|p| (p.input, p.age_ms)),
            Some((1_000, 700))
        );
    }

    #[test]
    fn a_long_chain_starts_again_with_a_whole_body() {
        let threads = Threads::new(1 << 20);
        let mut parents = 0;
        for n in 0..=MAX_CHAIN + 1 {
            let placed = threads.place(
                key(),
                || format!("ex_{n}"),
                vec![b'x'; n + 1],
                Profile::default(),
                HashSet::new(),
                0,
            );
            parents += usize::from(placed.parent.is_some());
        }
        assert_eq!(parents, MAX_CHAIN);
    }
}
