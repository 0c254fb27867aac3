//! The frame every console page shares (navigation, namespace, sign-out),
//! the error page, and how figures are written: counts with separators,
//! dollars, ratios, times.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};

use super::viewer::Viewer;

/// The console's sections, for the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Sessions and exchanges.
    Sessions,
    /// Memories.
    Memories,
    /// Savings over time.
    Savings,
}

/// A page of the console for `viewer`.
pub fn page(viewer: &Viewer, section: Section, title: &str, body: Markup) -> Response {
    let nav = [
        (Section::Sessions, "/ui/", "Sessions"),
        (Section::Memories, "/ui/memories", "Memories"),
        (Section::Savings, "/ui/savings", "Savings"),
    ];
    let frame = html! {
        header.top {
            a.brand href=(viewer.href("/ui/")) { "Cairn" }
            nav aria-label="Console" {
                ul {
                    @for (s, path, name) in nav {
                        li {
                            @if s == section {
                                a href=(viewer.href(path)) aria-current="page" { (name) }
                            } @else {
                                a href=(viewer.href(path)) { (name) }
                            }
                        }
                    }
                }
            }
            div.who {
                @if viewer.caller.admin {
                    form.ns method="get" action="" {
                        label for="ns" { "Namespace" }
                        input #ns name="ns" value=(viewer.namespace) size="12";
                        button type="submit" { "Show" }
                    }
                } @else {
                    span { "Namespace " strong { (viewer.namespace) } }
                }
                @if viewer.signed_in {
                    form method="post" action="/ui/logout" {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
            }
        }
        main #main {
            h1 { (title) }
            (body)
        }
    };
    document(StatusCode::OK, title, frame)
}

/// A page without the navigation (sign-in).
pub fn bare(status: StatusCode, title: &str, body: Markup) -> Response {
    document(
        status,
        title,
        html! {
            main #main.narrow {
                h1 { "Cairn — " (title) }
                (body)
            }
        },
    )
}

/// An error page: what went wrong, in words.
pub fn failure(viewer: Option<&Viewer>, status: StatusCode, message: &str) -> Response {
    let body = html! {
        p.error role="alert" { (message) }
        p { a href="/ui/" { "Back to the sessions" } }
    };
    let title = status.canonical_reason().unwrap_or("Error");
    let mut response = match viewer {
        Some(viewer) => page(viewer, Section::Sessions, title, body),
        None => bare(status, title, body),
    };
    *response.status_mut() = status;
    response
}

fn document(status: StatusCode, title: &str, content: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Cairn" }
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/ui/assets/console.css";
                script src="/ui/assets/console.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                (content)
            }
        }
    };
    let mut response = (status, Html(markup.into_string())).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A table's head: each column's title, numeric columns (`.num`, right
/// aligned) marked with a leading `#`.
pub fn head(columns: &[&str]) -> Markup {
    html! {
        thead { tr {
            @for column in columns {
                @if let Some(title) = column.strip_prefix('#') {
                    th scope="col" .num { (title) }
                } @else {
                    th scope="col" { (column) }
                }
            }
        } }
    }
}

/// `n` with thousands separators.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars, with more digits for small sums.
pub fn usd(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("${v:.2}")
    } else if v.abs() >= 1.0 {
        format!("${v:.3}")
    } else {
        format!("${v:.4}")
    }
}

/// A 0–1 ratio as a percentage.
pub fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// `part / whole` as "0.21×", or "–" when `whole` is zero.
pub fn times(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.2}×", part / whole)
    } else {
        "–".to_owned()
    }
}

/// A time in UTC, to the second.
pub fn when(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// `text` cut to `max` characters, with how much was left out.
pub fn clip(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
        None => (text, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(999), "999");
        assert_eq!(usd(0.01234), "$0.0123");
        assert_eq!(usd(37.714), "$37.714");
        assert_eq!(percent(0.976), "97.6 %");
        assert_eq!(times(8.08, 37.71), "0.21×");
        assert_eq!(times(1.0, 0.0), "–");
        assert_eq!(when(0), "1970-01-01 00:00:00");
        assert_eq!(clip("héllo", 2), ("hé", 3));
        assert_eq!(clip("hi", 5), ("hi", 0));
    }
}
