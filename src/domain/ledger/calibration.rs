//! Calibration of token estimates: the ratio of provider-reported to estimated
//! input tokens, learned per (namespace, model) as a bounded running mean.

/// Smallest ratio one sample may contribute.
pub const MIN_SAMPLE: f64 = 0.25;
/// Largest ratio one sample may contribute.
pub const MAX_SAMPLE: f64 = 4.0;
/// Past this many samples the mean weighs the newest sample as 1/(WINDOW+1),
/// so the factor keeps following a drifting tokenizer instead of freezing.
pub const WINDOW: i64 = 50;

/// A learned factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Reported / estimated tokens.
    pub factor: f64,
    /// Samples seen.
    pub samples: i64,
}

impl Default for Calibration {
    /// No samples: a factor of 1.
    fn default() -> Self {
        Self {
            factor: 1.0,
            samples: 0,
        }
    }
}

impl Calibration {
    /// Learns from one report: `reported` tokens where `estimated` were estimated
    /// (`estimated` must be at least 1). The ratio is clamped to
    /// [`MIN_SAMPLE`]..=[`MAX_SAMPLE`] so one odd report cannot swing the factor.
    pub fn learn(&mut self, reported: u64, estimated: u64) {
        let sample = (reported as f64 / estimated.max(1) as f64).clamp(MIN_SAMPLE, MAX_SAMPLE);
        let weight = self.samples.clamp(0, WINDOW) as f64;
        self.factor = (self.factor * weight + sample) / (weight + 1.0);
        self.samples = self.samples.saturating_add(1);
    }

    /// `tokens` corrected by the factor.
    pub fn apply(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.factor).round() as u64
    }

    /// The suffix appended to a count's method: `;calibrated:x1.07`.
    pub fn method_suffix(&self) -> String {
        format!(";calibrated:x{:.2}", self.factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_is_the_mean_of_the_samples() {
        let mut c = Calibration::default();
        c.learn(110, 100);
        assert!((c.factor - 1.10).abs() < 1e-9);
        c.learn(130, 100);
        assert!((c.factor - 1.20).abs() < 1e-9, "{}", c.factor);
        assert_eq!(c.samples, 2);
        assert_eq!(c.apply(1000), 1200);
        assert_eq!(c.method_suffix(), ";calibrated:x1.20");
    }

    #[test]
    fn odd_samples_are_clamped() {
        let mut c = Calibration::default();
        c.learn(1_000_000, 1);
        assert!((c.factor - MAX_SAMPLE).abs() < 1e-9);
        let mut c = Calibration::default();
        c.learn(0, 1000);
        assert!((c.factor - MIN_SAMPLE).abs() < 1e-9);
    }

    #[test]
    fn the_mean_keeps_following_after_the_window() {
        let mut c = Calibration::default();
        for _ in 0..1000 {
            c.learn(100, 100);
        }
        for _ in 0..100 {
            c.learn(200, 100);
        }
        // A plain mean over 1,100 samples would still be ~1.09.
        assert!(c.factor > 1.8, "{}", c.factor);
        assert_eq!(c.samples, 1100);
    }
}
