//! Daily budgets per namespace: tokens and/or USD, a global default with
//! per-namespace overrides, reset at UTC midnight.

use std::collections::HashMap;

use chrono::{DateTime, Days, NaiveDate, Utc};

use crate::domain::DomainError;

/// The daily limits of one namespace (`None`: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    /// Input plus output tokens per day.
    pub tokens: Option<u64>,
    /// USD per day.
    pub cost_usd: Option<f64>,
}

/// What a namespace has spent today.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spend {
    /// Input plus output tokens reported today.
    pub tokens: u64,
    /// Their cost in USD.
    pub cost_usd: f64,
}

/// A namespace's override of one limit: unset (take the default), off, or a value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Override {
    tokens: Option<Option<u64>>,
    cost_usd: Option<Option<f64>>,
}

/// Shared spend counters outlive their day by this long (clock skew between replicas).
pub const SHARED_SPEND_MARGIN_SECS: i64 = 3600;

/// The larger of this replica's view of a day's spend and the shared one: the
/// shared counters miss reports made while they were down, the local view
/// misses the other replicas'.
pub fn at_least(local: Spend, shared: Option<(u64, f64)>) -> Spend {
    match shared {
        Some((tokens, cost_usd)) => Spend {
            tokens: local.tokens.max(tokens),
            cost_usd: local.cost_usd.max(cost_usd),
        },
        None => local,
    }
}

/// Budgets of every namespace.
#[derive(Clone, Debug, Default)]
pub struct Budgets {
    default: Limits,
    overrides: HashMap<String, Override>,
}

impl Budgets {
    /// Global defaults plus overrides written as
    /// `ns1:tokens=5000000,ns2:cost=12.5,ns3:tokens=off:cost=2` (`off`: no limit).
    pub fn parse(
        default_tokens: Option<u64>,
        default_cost_usd: Option<f64>,
        spec: Option<&str>,
    ) -> Result<Self, String> {
        if let Some(cost) = default_cost_usd {
            check_cost(cost).map_err(|e| format!("daily cost budget: {e}"))?;
        }
        let mut overrides = HashMap::new();
        for entry in spec
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let mut parts = entry.split(':');
            let namespace = parts.next().unwrap_or_default().trim();
            if namespace.is_empty() {
                return Err(format!("budget entry `{entry}` names no namespace"));
            }
            let mut over = Override::default();
            let mut any = false;
            for setting in parts {
                let (key, value) = setting.split_once('=').ok_or_else(|| {
                    format!("budget entry `{entry}`: `{setting}` must be tokens=N or cost=USD")
                })?;
                let off = value.trim().eq_ignore_ascii_case("off");
                match key.trim() {
                    "tokens" => {
                        over.tokens = Some(if off {
                            None
                        } else {
                            Some(value.trim().parse::<u64>().map_err(|_| {
                                format!(
                                    "budget entry `{entry}`: tokens must be a whole number or off"
                                )
                            })?)
                        });
                    }
                    "cost" => {
                        over.cost_usd = Some(if off {
                            None
                        } else {
                            let cost = value.trim().parse::<f64>().map_err(|_| {
                                format!(
                                    "budget entry `{entry}`: cost must be a number of USD or off"
                                )
                            })?;
                            check_cost(cost).map_err(|e| format!("budget entry `{entry}`: {e}"))?;
                            Some(cost)
                        });
                    }
                    other => {
                        return Err(format!(
                            "budget entry `{entry}`: unknown budget `{other}` (tokens or cost)"
                        ));
                    }
                }
                any = true;
            }
            if !any {
                return Err(format!(
                    "budget entry `{entry}` sets nothing: write {namespace}:tokens=N or {namespace}:cost=USD"
                ));
            }
            if overrides.insert(namespace.to_owned(), over).is_some() {
                return Err(format!("namespace `{namespace}` has two budget entries"));
            }
        }
        Ok(Self {
            default: Limits {
                tokens: default_tokens,
                cost_usd: default_cost_usd,
            },
            overrides,
        })
    }

    /// The limits in force for `namespace`.
    pub fn limits(&self, namespace: &str) -> Limits {
        let Some(over) = self.overrides.get(namespace) else {
            return self.default;
        };
        Limits {
            tokens: over.tokens.unwrap_or(self.default.tokens),
            cost_usd: over.cost_usd.unwrap_or(self.default.cost_usd),
        }
    }
}

fn check_cost(cost: f64) -> Result<(), String> {
    if cost.is_finite() && cost >= 0.0 {
        Ok(())
    } else {
        Err(format!("{cost} is not a USD amount (a number >= 0)"))
    }
}

/// The start of the UTC day after `now`: when daily budgets reset.
pub fn resets_at(now: DateTime<Utc>) -> DateTime<Utc> {
    let tomorrow: NaiveDate = now
        .date_naive()
        .checked_add_days(Days::new(1))
        .unwrap_or(NaiveDate::MAX);
    tomorrow.and_time(chrono::NaiveTime::MIN).and_utc()
}

/// Fails once `spent` reaches a limit (tokens are checked first).
pub fn check(limits: Limits, spent: Spend, now: DateTime<Utc>) -> Result<(), DomainError> {
    let exceeded = |budget: &'static str, limit: f64, spent: f64| {
        let reset = resets_at(now);
        let unit = if budget == "tokens" { "tokens" } else { "USD" };
        DomainError::BudgetExceeded {
            budget,
            limit,
            spent,
            resets_at: reset,
            retry_after_secs: u64::try_from((reset - now).num_seconds())
                .unwrap_or(0)
                .max(1),
            message: format!(
                "the namespace's daily {budget} budget is spent: {spent} of {limit} {unit}; it resets at {}",
                reset.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        }
    };
    if let Some(limit) = limits.tokens
        && spent.tokens >= limit
    {
        return Err(exceeded("tokens", limit as f64, spent.tokens as f64));
    }
    if let Some(limit) = limits.cost_usd
        && spent.cost_usd >= limit
    {
        return Err(exceeded("cost_usd", limit, round_usd(spent.cost_usd)));
    }
    Ok(())
}

/// USD rounded to a millionth of a cent, for answers.
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1e8).round() / 1e8
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    #[test]
    fn overrides_replace_the_defaults_they_name() {
        let budgets = Budgets::parse(
            Some(1000),
            Some(5.0),
            Some("a:tokens=50, b:cost=12.5 ,c:tokens=off:cost=off"),
        )
        .unwrap();
        assert_eq!(
            budgets.limits("a"),
            Limits {
                tokens: Some(50),
                cost_usd: Some(5.0)
            }
        );
        assert_eq!(
            budgets.limits("b"),
            Limits {
                tokens: Some(1000),
                cost_usd: Some(12.5)
            }
        );
        assert_eq!(budgets.limits("c"), Limits::default());
        assert_eq!(budgets.limits("other").tokens, Some(1000));
    }

    #[test]
    fn bad_budget_specs_are_refused() {
        for (spec, needle) in [
            ("a", "sets nothing"),
            (":tokens=5", "no namespace"),
            ("a:tokens=lots", "whole number"),
            ("a:tokens=-5", "whole number"),
            ("a:cost=-1", "USD amount"),
            ("a:cost=NaN", "USD amount"),
            ("a:money=5", "unknown budget"),
            ("a:tokens", "tokens=N"),
            ("a:tokens=1,a:cost=2", "two budget entries"),
        ] {
            let err = Budgets::parse(None, None, Some(spec)).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
        assert!(Budgets::parse(None, Some(-2.0), None).is_err());
    }

    #[test]
    fn a_spent_budget_fails_with_its_figures_until_midnight() {
        let now = at("2026-03-01T22:00:00Z");
        let limits = Limits {
            tokens: Some(100),
            cost_usd: Some(1.0),
        };
        let under = Spend {
            tokens: 99,
            cost_usd: 0.5,
        };
        assert!(check(limits, under, now).is_ok());
        let err = check(
            limits,
            Spend {
                tokens: 100,
                cost_usd: 0.5,
            },
            now,
        )
        .unwrap_err();
        match err {
            DomainError::BudgetExceeded {
                budget,
                limit,
                spent,
                resets_at,
                retry_after_secs,
                ..
            } => {
                assert_eq!(budget, "tokens");
                assert_eq!((limit, spent), (100.0, 100.0));
                assert_eq!(resets_at, at("2026-03-02T00:00:00Z"));
                assert_eq!(retry_after_secs, 2 * 3600);
            }
            other => panic!("{other:?}"),
        }
        let cost = check(
            limits,
            Spend {
                tokens: 1,
                cost_usd: 1.25,
            },
            now,
        )
        .unwrap_err();
        assert!(matches!(
            cost,
            DomainError::BudgetExceeded {
                budget: "cost_usd",
                ..
            }
        ));
    }
}
