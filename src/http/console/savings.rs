//! Savings over time: billed against untouched cost and tokens sent against
//! tokens the client sent, by day and by model, from the ledger — a chart
//! drawn on the server as SVG, and the same figures as a table.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};

use super::layout::{self, Section, count, head, times, usd};
use super::viewer::Viewer;
use crate::domain::proxying::exchanges::{ExchangeFilter, ExchangeRecord};
use crate::http::state::AppState;

/// Most exchanges summed (the newest).
const SCAN: u32 = 20_000;

/// Sums of a group of exchanges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Exchanges.
    pub exchanges: u64,
    /// Tokens the client sent.
    pub tokens_client: u64,
    /// Tokens that went upstream.
    pub tokens_upstream: u64,
    /// USD billed.
    pub billed: f64,
    /// USD untouched.
    pub untouched: f64,
}

impl Totals {
    fn add(&mut self, r: &ExchangeRecord) {
        self.exchanges += 1;
        self.tokens_client += r.figures.tokens_client;
        self.tokens_upstream += r.figures.tokens_upstream;
        self.billed += r.figures.billed_usd;
        self.untouched += r.figures.counterfactual.usd;
    }

    /// USD saved (negative: the proxy cost more).
    pub fn saved(&self) -> f64 {
        self.untouched - self.billed
    }
}

/// Exchanges summed by UTC day (`YYYY-MM-DD`) and by model.
pub fn group(records: &[ExchangeRecord]) -> (BTreeMap<String, Totals>, BTreeMap<String, Totals>) {
    let mut days: BTreeMap<String, Totals> = BTreeMap::new();
    let mut models: BTreeMap<String, Totals> = BTreeMap::new();
    for r in records {
        let day = layout::when(r.at_ms).chars().take(10).collect::<String>();
        days.entry(day).or_default().add(r);
        models.entry(r.model.clone()).or_default().add(r);
    }
    (days, models)
}

/// `GET /ui/savings`.
pub async fn show(State(state): State<AppState>, viewer: Viewer) -> Response {
    let records = match super::newest(&state, &viewer, ExchangeFilter::default(), SCAN).await {
        Ok(records) => records,
        Err(page) => return page,
    };
    let (days, models) = group(&records);
    let mut all = Totals::default();
    records.iter().for_each(|r| all.add(r));
    let body = html! {
        @if records.is_empty() {
            p.empty { "No proxied exchange yet in this namespace." }
        } @else {
            dl.figures {
                div { dt { "Exchanges" } dd { (count(all.exchanges)) } }
                div { dt { "Billed" } dd { (usd(all.billed)) } }
                div { dt { "Untouched" } dd { (usd(all.untouched)) } }
                div { dt { "Saved" } dd { (usd(all.saved())) " (" (times(all.billed, all.untouched)) " of untouched)" } }
                div { dt { "Tokens sent" } dd { (count(all.tokens_upstream)) " of " (count(all.tokens_client)) } }
            }
            h2 #by-day { "By day (UTC)" }
            (chart(&days))
            (table("days", "Day", &days))
            h2 #by-model { "By model" }
            (table("models", "Model", &models))
            p.hint { "Untouched: each request priced as the client sent it, with the provider's prompt caching applied to its conversation (see the README's ledger section)." }
        }
    };
    layout::page(&viewer, Section::Savings, "Savings", body)
}

fn table(id: &str, what: &str, rows: &BTreeMap<String, Totals>) -> Markup {
    html! {
        table id=(id) {
            (head(&[what, "#Exchanges", "#Tokens sent", "#Untouched tokens", "#Billed", "#Untouched", "#Saved"]))
            tbody { @for (key, t) in rows { tr {
                th scope="row" { (key) }
                td.num { (count(t.exchanges)) }
                td.num { (count(t.tokens_upstream)) }
                td.num { (count(t.tokens_client)) }
                td.num { (usd(t.billed)) }
                td.num { (usd(t.untouched)) }
                td.num { (usd(t.saved())) }
            } } }
        }
    }
}

/// Bars of untouched (behind) and billed (in front) cost per day.
fn chart(days: &BTreeMap<String, Totals>) -> Markup {
    const W: f64 = 720.0;
    const H: f64 = 220.0;
    const LEFT: f64 = 64.0;
    const BOTTOM: f64 = 28.0;
    let top = days
        .values()
        .map(|t| t.untouched.max(t.billed))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let n = days.len().max(1) as f64;
    let slot = (W - LEFT) / n;
    let bar = (slot * 0.7).min(48.0);
    let y = |usd: f64| (H - BOTTOM) * (1.0 - usd / top);
    let label = format!(
        "Cost per day: untouched against billed, {} days, highest {}",
        days.len(),
        usd(top)
    );
    html! {
        figure.chart {
            svg viewBox=(format!("0 0 {W} {H}")) role="img" aria-labelledby="chart-title" xmlns="http://www.w3.org/2000/svg" {
                title #chart-title { (label) }
                line.axis x1=(LEFT) y1=(H - BOTTOM) x2=(W) y2=(H - BOTTOM) {}
                text.tick x=(LEFT - 6.0) y=(12.0) text-anchor="end" { (usd(top)) }
                text.tick x=(LEFT - 6.0) y=(H - BOTTOM) text-anchor="end" { "$0" }
                @for (i, (day, t)) in days.iter().enumerate() {
                    @let x = LEFT + slot * i as f64 + (slot - bar) / 2.0;
                    rect.untouched x=(fmt(x)) y=(fmt(y(t.untouched))) width=(fmt(bar)) height=(fmt(H - BOTTOM - y(t.untouched))) {}
                    rect.billed x=(fmt(x + bar * 0.2)) y=(fmt(y(t.billed))) width=(fmt(bar * 0.6)) height=(fmt(H - BOTTOM - y(t.billed))) {}
                    @if days.len() <= 14 || i % (days.len() / 7).max(1) == 0 {
                        text.tick x=(fmt(x + bar / 2.0)) y=(H - 8.0) text-anchor="middle" { (&day[5..]) }
                    }
                }
            }
            figcaption {
                span.key.untouched-key { "■" } " untouched  "
                span.key.billed-key { "■" } " billed"
            }
        }
    }
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::proxying::exchanges::Figures;

    fn at(ms: i64, model: &str, billed: f64, untouched: f64) -> ExchangeRecord {
        let mut figures = Figures {
            billed_usd: billed,
            tokens_client: 10,
            tokens_upstream: 4,
            ..Figures::default()
        };
        figures.counterfactual.usd = untouched;
        ExchangeRecord {
            id: "ex_1".to_owned(),
            thread: "t".to_owned(),
            api: "messages".to_owned(),
            model: model.to_owned(),
            at_ms: ms,
            status: 200,
            figures,
        }
    }

    #[test]
    fn exchanges_sum_by_day_and_model() {
        const DAY: i64 = 86_400_000;
        let records = [
            at(0, "a", 1.0, 3.0),
            at(DAY - 1, "b", 1.0, 2.0),
            at(DAY, "a", 0.5, 0.5),
        ];
        let (days, models) = group(&records);
        assert_eq!(
            days.keys().collect::<Vec<_>>(),
            ["1970-01-01", "1970-01-02"]
        );
        assert!((days["1970-01-01"].saved() - 3.0).abs() < 1e-9);
        assert_eq!(models["a"].exchanges, 2);
        assert_eq!(models["a"].tokens_client, 20);
        let svg = chart(&days).into_string();
        assert_eq!(svg.matches("<rect class=\"billed\"").count(), 2, "{svg}");
    }
}
