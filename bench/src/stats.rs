//! Small numeric helpers: latency percentiles, throughput, units.

use std::time::Duration;

/// Bytes in a MiB.
pub const MIB: u64 = 1 << 20;

/// Latency distribution of a set of requests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples` (sorted in place); zero when empty.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let rank = |p: f64| -> Duration {
            if samples.is_empty() {
                return Duration::ZERO;
            }
            let n = samples.len() as f64;
            let index = ((p / 100.0 * n).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index]
        };
        Self {
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: samples.last().copied().unwrap_or_default(),
        }
    }
}

/// MiB per second of `bytes` moved in `elapsed`.
pub fn mib_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / MIB as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// Milliseconds, as a float.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// KiB to MiB.
pub fn kib_to_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!(p.p50, Duration::from_millis(50));
        assert_eq!(p.p90, Duration::from_millis(90));
        assert_eq!(p.p99, Duration::from_millis(99));
        assert_eq!(p.max, Duration::from_millis(100));
        assert_eq!(Percentiles::of(&mut []).max, Duration::ZERO);
    }
}
