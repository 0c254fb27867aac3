//! Tool-call / tool-result pairing: the units a strategy must keep or fold
//! whole, and a validator of the providers' rules.
//!
//! OpenAI: an assistant message with `tool_calls` is followed by one `tool`
//! message per call id before any other message. Anthropic: the `tool_use`
//! blocks of an assistant turn are answered by `tool_result` blocks in the
//! very next (user) turn, and turns alternate user / assistant. A final
//! assistant turn whose calls are still pending is accepted.

use std::collections::BTreeSet;
use std::ops::Range;

use serde_json::Value;

use super::format::{Format, invalid};
use crate::domain::DomainError;

/// Message ranges that stay together: a tool-calling assistant message with
/// the messages answering it, or one message alone. They cover the list in order.
pub fn units(format: Format, messages: &[Value]) -> Vec<Range<usize>> {
    let mut units = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let mut end = i + 1;
        if !call_ids(format, &messages[i]).is_empty() {
            match format {
                Format::OpenAi => {
                    while end < messages.len() && messages[end]["role"] == "tool" {
                        end += 1;
                    }
                }
                Format::Anthropic => {
                    if end < messages.len() && !result_ids(format, &messages[end]).is_empty() {
                        end += 1;
                    }
                }
            }
        }
        units.push(i..end);
        i = end;
    }
    units
}

/// Ids of the tool calls an assistant message makes.
pub fn call_ids(format: Format, message: &Value) -> Vec<String> {
    if message["role"] != "assistant" {
        return Vec::new();
    }
    let ids = match format {
        Format::OpenAi => message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["id"].as_str())
            .collect::<Vec<_>>(),
        Format::Anthropic => message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect(),
    };
    ids.into_iter().map(str::to_owned).collect()
}

/// Ids of the tool calls a message answers.
pub fn result_ids(format: Format, message: &Value) -> Vec<String> {
    match format {
        Format::OpenAi if message["role"] == "tool" => message["tool_call_id"]
            .as_str()
            .map(|id| vec![id.to_owned()])
            .unwrap_or_default(),
        Format::OpenAi => Vec::new(),
        Format::Anthropic => message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str().map(str::to_owned))
            .collect(),
    }
}

/// Checks the pairing rules (and, with `alternation`, Anthropic's turn order).
pub fn check(format: Format, messages: &[Value], alternation: bool) -> Result<(), DomainError> {
    let mut pending: BTreeSet<String> = BTreeSet::new();
    let mut caller = 0;
    for (i, message) in messages.iter().enumerate() {
        let answers = result_ids(format, message);
        match format {
            Format::OpenAi => {
                if message["role"] != "tool" && !pending.is_empty() {
                    return Err(unanswered(caller, &pending));
                }
            }
            Format::Anthropic => {
                if message["role"] == "system" {
                    continue; // a mid-conversation system message stands between turns
                }
                if alternation && i > 0 && message["role"] == messages[i - 1]["role"] {
                    return Err(invalid(
                        format!("messages[{i}].role"),
                        "Anthropic turns must alternate between user and assistant",
                    ));
                }
                if !pending.is_empty() && answers.is_empty() {
                    return Err(unanswered(caller, &pending));
                }
            }
        }
        for id in &answers {
            if !pending.remove(id) {
                return Err(invalid(
                    format!("messages[{i}]"),
                    format!(
                        "the result for tool call `{id}` does not follow the call that made it"
                    ),
                ));
            }
        }
        if format == Format::Anthropic && !pending.is_empty() {
            return Err(unanswered(caller, &pending));
        }
        let calls = call_ids(format, message);
        if !calls.is_empty() {
            pending.extend(calls);
            caller = i;
        }
    }
    Ok(())
}

fn unanswered(caller: usize, pending: &BTreeSet<String>) -> DomainError {
    let ids: Vec<&str> = pending.iter().map(String::as_str).collect();
    invalid(
        format!("messages[{caller}]"),
        format!(
            "tool call(s) {} have no result right after them",
            ids.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn openai_call(id: &str) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
    }

    #[test]
    fn openai_units_hold_calls_with_their_results() {
        let messages = [
            json!({"role": "user", "content": "list"}),
            openai_call("c1"),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a\nb"}),
            json!({"role": "assistant", "content": "done"}),
        ];
        assert_eq!(units(Format::OpenAi, &messages), [0..1, 1..3, 3..4]);
        check(Format::OpenAi, &messages, true).unwrap();
        let broken = [
            messages[0].clone(),
            messages[1].clone(),
            messages[3].clone(),
        ];
        let err = check(Format::OpenAi, &broken, true).unwrap_err();
        assert!(err.to_string().starts_with("messages[1]:"), "{err}");
        let orphan = [messages[0].clone(), messages[2].clone()];
        assert!(check(Format::OpenAi, &orphan, true).is_err());
        // A call still pending at the end is fine.
        check(Format::OpenAi, &messages[..2], true).unwrap();
    }

    #[test]
    fn anthropic_results_come_in_the_next_turn() {
        let messages = [
            json!({"role": "user", "content": "list"}),
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}),
            json!({"role": "assistant", "content": "done"}),
        ];
        assert_eq!(units(Format::Anthropic, &messages), [0..1, 1..3, 3..4]);
        check(Format::Anthropic, &messages, true).unwrap();
        let skipped = [
            messages[0].clone(),
            messages[1].clone(),
            json!({"role": "user", "content": "hm"}),
            messages[2].clone(),
        ];
        assert!(check(Format::Anthropic, &skipped, false).is_err());
        let same_role = [messages[0].clone(), messages[0].clone()];
        assert!(check(Format::Anthropic, &same_role, true).is_err());
        check(Format::Anthropic, &same_role, false).unwrap();
    }
}
