//! A circuit breaker for a shared cache: after a few failures in a row the
//! cache is left alone for a while, so a dead or slow Redis costs requests
//! nothing but one skipped lookup.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures in a row that open the circuit.
const TRIP_AFTER: u32 = 3;

/// Whether a call may go to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// The circuit is closed: call.
    Closed,
    /// The circuit was open and its pause is over: this one call probes.
    Probe,
    /// The circuit is open: skip the cache.
    Open,
}

#[derive(Debug)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
    probing: bool,
    last_error: Option<String>,
}

/// Counts consecutive failures; open for `pause` after [`TRIP_AFTER`] of them.
#[derive(Debug)]
pub struct Breaker {
    pause: Duration,
    state: Mutex<State>,
}

impl Breaker {
    /// A closed breaker that pauses the cache for `pause` when it trips.
    pub fn new(pause: Duration) -> Self {
        Self {
            pause,
            state: Mutex::new(State {
                failures: 0,
                open_until: None,
                probing: false,
                last_error: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the next call may go to the cache (one probe at a time once a pause is over).
    pub fn gate(&self) -> Gate {
        let mut state = self.lock();
        match state.open_until {
            None => Gate::Closed,
            Some(until) if Instant::now() < until || state.probing => Gate::Open,
            Some(_) => {
                state.probing = true;
                Gate::Probe
            }
        }
    }

    /// A call succeeded: the circuit closes.
    pub fn success(&self) {
        let mut state = self.lock();
        state.failures = 0;
        state.open_until = None;
        state.probing = false;
        state.last_error = None;
    }

    /// A call failed with `error`; true when this failure opened the circuit.
    pub fn failure(&self, error: String) -> bool {
        let mut state = self.lock();
        state.failures = state.failures.saturating_add(1);
        state.last_error = Some(error);
        let was_open = state.open_until.is_some();
        if state.probing || state.failures >= TRIP_AFTER {
            state.open_until = Some(Instant::now() + self.pause);
            state.probing = false;
        }
        !was_open && state.open_until.is_some()
    }

    /// `None` when healthy, else why the cache is degraded.
    pub fn degraded(&self) -> Option<String> {
        let state = self.lock();
        if state.failures == 0 {
            return None;
        }
        let error = state.last_error.as_deref().unwrap_or("unknown error");
        Some(match state.open_until {
            Some(_) => format!("circuit open after {} failures: {error}", state.failures),
            None => format!("{} recent failures: {error}", state.failures),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_failures_in_a_row_and_closes_on_a_successful_probe() {
        let breaker = Breaker::new(Duration::from_millis(30));
        assert_eq!(breaker.gate(), Gate::Closed);
        assert!(!breaker.failure("refused".into()));
        breaker.success();
        assert!(breaker.degraded().is_none());
        assert!(!breaker.failure("refused".into()));
        assert!(!breaker.failure("refused".into()));
        assert!(breaker.failure("refused".into()), "the third failure trips");
        assert_eq!(breaker.gate(), Gate::Open);
        assert!(breaker.degraded().unwrap().contains("circuit open"));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(breaker.gate(), Gate::Probe);
        assert_eq!(breaker.gate(), Gate::Open, "one probe at a time");
        breaker.success();
        assert_eq!(breaker.gate(), Gate::Closed);
    }

    #[test]
    fn a_failed_probe_opens_the_circuit_again() {
        let breaker = Breaker::new(Duration::from_millis(20));
        for _ in 0..3 {
            breaker.failure("timeout".into());
        }
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(breaker.gate(), Gate::Probe);
        assert!(!breaker.failure("timeout".into()), "it was open already");
        assert_eq!(breaker.gate(), Gate::Open);
    }
}
