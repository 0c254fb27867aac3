//! Requests being served, so that background work (the search indexer)
//! gives way to them: on a small machine the indexer's full-text writes and
//! decoding otherwise take the cores that puts and slices wait for.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts requests in flight and remembers when the last one ended.
#[derive(Debug)]
pub struct Foreground {
    in_flight: AtomicUsize,
    /// One more than the milliseconds after `epoch` at which the last
    /// request ended; 0 while none has.
    last_end: AtomicU64,
    epoch: Instant,
}

impl Default for Foreground {
    fn default() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            last_end: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

/// Held while a request is served.
#[derive(Debug)]
pub struct Busy(Arc<Foreground>);

impl Drop for Busy {
    fn drop(&mut self) {
        let ended = self.0.now_ms().saturating_add(1);
        self.0.last_end.fetch_max(ended, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Release);
    }
}

/// How background work gives way: it waits for `quiet` without requests,
/// but never longer than `max_wait`, so that it still gets on under
/// steady traffic.
#[derive(Clone, Copy, Debug)]
pub struct GiveWay {
    /// Time without a request in flight before background work goes on.
    pub quiet: Duration,
    /// The longest wait.
    pub max_wait: Duration,
}

impl Foreground {
    /// Marks a request in flight until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::Acquire);
        Busy(self.clone())
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// True when no request is in flight and none ended within `quiet`.
    pub fn is_quiet(&self, quiet: Duration) -> bool {
        if self.in_flight() > 0 {
            return false;
        }
        match self.last_end.load(Ordering::Relaxed) {
            0 => true, // no request yet
            ended => u128::from(self.now_ms().saturating_sub(ended - 1)) >= quiet.as_millis(),
        }
    }

    /// Waits until the server is quiet (see [`GiveWay`]); returns how long it waited.
    pub async fn give_way(&self, how: GiveWay) -> Duration {
        let started = Instant::now();
        let poll = (how.quiet / 2).clamp(Duration::from_millis(1), Duration::from_millis(20));
        while !self.is_quiet(how.quiet) && started.elapsed() < how.max_wait {
            tokio::time::sleep(poll).await;
        }
        started.elapsed()
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOW: GiveWay = GiveWay {
        quiet: Duration::from_millis(20),
        max_wait: Duration::from_millis(300),
    };

    #[tokio::test]
    async fn background_work_waits_while_a_request_is_served_but_not_forever() {
        let foreground = Arc::new(Foreground::default());
        assert!(foreground.give_way(HOW).await < Duration::from_millis(20));

        let busy = foreground.enter();
        assert_eq!(foreground.in_flight(), 1);
        let waited = foreground.give_way(HOW).await;
        assert!(waited >= HOW.max_wait, "waited {waited:?}");

        let releaser = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(busy);
        });
        let waited = foreground.give_way(HOW).await;
        releaser.await.unwrap();
        assert!(
            waited >= Duration::from_millis(50 + 20) && waited < HOW.max_wait,
            "waited {waited:?}: until the request ended and the quiet time passed"
        );
        assert_eq!(foreground.in_flight(), 0);
    }
}
