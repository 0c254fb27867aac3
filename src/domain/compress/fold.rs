//! Folding message runs: which units merge into runs, the transcript that
//! stores them (one JSON message per line, so each line restores one message
//! exactly), the run's summary, and the message(s) that take its place.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::{Value, json};

use super::format::{self, Format};
use super::{Context, marker};

/// Runs shorter than this (in characters of their JSON) are never folded:
/// no marker could be shorter.
const MIN_RUN_CHARS: usize = 400;

/// Contiguous runs of the units flagged in `fold_unit`, long enough to fold
/// and holding more than markers (a run of markers alone stays, which keeps
/// compressing twice a no-op).
pub fn runs(ctx: &Context<'_>, fold_unit: &[bool]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (unit, fold) in ctx.units.iter().zip(fold_unit) {
        if !fold {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.end == unit.start => run.end = unit.end,
            _ => runs.push(unit.clone()),
        }
    }
    runs.retain(|run| {
        let messages = &ctx.messages[run.clone()];
        !messages.iter().all(format::is_marker_message)
            && transcript(messages).len() >= MIN_RUN_CHARS
    });
    runs
}

/// The stored form of a run: each message as one line of compact JSON.
pub fn transcript(messages: &[Value]) -> String {
    let mut out = String::new();
    for message in messages {
        out.push_str(&message.to_string());
        out.push('\n');
    }
    out
}

/// A deterministic summary of a run, at most `max_chars` characters: counts
/// by role, the tools called, then the opening and closing texts.
pub fn summarize(format: Format, messages: &[Value], max_chars: usize) -> String {
    let mut roles: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tools: BTreeMap<String, usize> = BTreeMap::new();
    for message in messages {
        *roles
            .entry(message["role"].as_str().unwrap_or("?"))
            .or_default() += 1;
        let calls = match format {
            Format::OpenAi => message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["function"]["name"].as_str())
                .collect::<Vec<_>>(),
            Format::Anthropic => message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["name"].as_str())
                .collect(),
        };
        for name in calls {
            *tools.entry(name.to_owned()).or_default() += 1;
        }
    }
    let roles: Vec<String> = roles.iter().map(|(r, n)| format!("{n} {r}")).collect();
    let mut text = format!("{} messages ({})", messages.len(), roles.join(", "));
    if !tools.is_empty() {
        let tools: Vec<String> = tools
            .iter()
            .map(|(t, n)| {
                if *n > 1 {
                    format!("{t}×{n}")
                } else {
                    t.clone()
                }
            })
            .collect();
        text.push_str(&format!("; tools called: {}", tools.join(", ")));
    }
    let said: Vec<(String, String)> = messages
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("user" | "assistant")))
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_owned(),
                format::message_text(m),
            )
        })
        .filter(|(_, t)| !t.trim().is_empty())
        .collect();
    let line = |(role, said): &(String, String)| {
        let flat = said.split_whitespace().collect::<Vec<_>>().join(" ");
        format!("\n{role}: {}", marker::clip(&flat, 160))
    };
    if let Some(first) = said.first() {
        text.push_str(&line(first));
    }
    if said.len() > 1
        && let Some(last) = said.last()
    {
        text.push_str(&line(last));
    }
    marker::clip(&text, max_chars).to_owned()
}

/// The message(s) replacing a folded run. OpenAI: one user message. Anthropic:
/// one message in the run's first role, plus a closing one in its last role
/// when the two differ, so that turns still alternate around it.
pub fn replacement(format: Format, run: &[Value], text: String, closing: String) -> Vec<Value> {
    match format {
        Format::OpenAi => vec![json!({"role": "user", "content": text})],
        Format::Anthropic => {
            let first = run
                .first()
                .map_or("user", |m| m["role"].as_str().unwrap_or("user"));
            let last = run
                .last()
                .map_or(first, |m| m["role"].as_str().unwrap_or(first));
            let mut out = vec![json!({"role": first, "content": text})];
            if last != first {
                out.push(json!({"role": last, "content": closing}));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_count_roles_and_tools() {
        let run = [
            json!({"role": "user", "content": "please run the tests"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "pytest", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c", "content": "ok"}),
            json!({"role": "assistant", "content": "all green"}),
        ];
        let text = summarize(Format::OpenAi, &run, 800);
        assert_eq!(
            text,
            "4 messages (2 assistant, 1 tool, 1 user); tools called: pytest\nuser: please run the tests\nassistant: all green"
        );
        assert_eq!(summarize(Format::OpenAi, &run, 10).chars().count(), 10);
    }

    #[test]
    fn anthropic_replacements_keep_turns_alternating() {
        let run = [
            json!({"role": "user", "content": "a"}),
            json!({"role": "assistant", "content": "b"}),
        ];
        let out = replacement(Format::Anthropic, &run, "x".into(), "y".into());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["role"], "user");
        assert_eq!(out[1]["role"], "assistant");
        let out = replacement(Format::Anthropic, &run[..1], "x".into(), "y".into());
        assert_eq!(out.len(), 1);
    }
}
