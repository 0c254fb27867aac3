//! Shape checks of a message list for its format, each failure naming the
//! offending value's path (`messages[3].content[1].tool_use_id`).

use serde_json::Value;

use super::format::{Format, invalid};
use crate::domain::DomainError;

/// Checks the shape of every message for `format`.
pub fn validate(
    format: Format,
    messages: &[Value],
    system: Option<&Value>,
) -> Result<(), DomainError> {
    if format == Format::OpenAi && system.is_some() {
        return Err(DomainError::field(
            "system",
            "the OpenAI format carries system prompts as messages with role `system`",
        ));
    }
    if let Some(system) = system {
        match system {
            Value::String(_) => {}
            Value::Array(blocks) => {
                for (k, block) in blocks.iter().enumerate() {
                    block_type(block, &format!("system[{k}]"))?;
                }
            }
            _ => return Err(invalid("system", "must be a string or an array of blocks")),
        }
    }
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        if !message.is_object() {
            return Err(invalid(at, "must be an object"));
        }
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{at}.role"), "must be a string"))?;
        match format {
            Format::OpenAi => validate_openai(message, role, &at)?,
            Format::Anthropic => validate_anthropic(message, role, &at)?,
        }
    }
    Ok(())
}

fn block_type<'a>(block: &'a Value, at: &str) -> Result<&'a str, DomainError> {
    block.get("type").and_then(Value::as_str).ok_or_else(|| {
        invalid(
            format!("{at}.type"),
            "each content block needs a string `type`",
        )
    })
}

fn text_parts(content: &Value, at: &str) -> Result<(), DomainError> {
    match content {
        Value::String(_) => Ok(()),
        Value::Array(parts) => {
            for (k, part) in parts.iter().enumerate() {
                let part_at = format!("{at}[{k}]");
                if block_type(part, &part_at)? == "text" && !part["text"].is_string() {
                    return Err(invalid(format!("{part_at}.text"), "must be a string"));
                }
            }
            Ok(())
        }
        _ => Err(invalid(at, "must be a string or an array of content parts")),
    }
}

fn validate_openai(message: &Value, role: &str, at: &str) -> Result<(), DomainError> {
    let content = message.get("content").unwrap_or(&Value::Null);
    match role {
        "system" | "developer" | "user" => text_parts(content, &format!("{at}.content")),
        "assistant" => {
            if !content.is_null() {
                text_parts(content, &format!("{at}.content"))?;
            }
            if let Some(calls) = message.get("tool_calls") {
                let calls = calls
                    .as_array()
                    .ok_or_else(|| invalid(format!("{at}.tool_calls"), "must be an array"))?;
                for (k, call) in calls.iter().enumerate() {
                    if !call["id"].is_string() {
                        return Err(invalid(
                            format!("{at}.tool_calls[{k}].id"),
                            "must be a string",
                        ));
                    }
                    if !call["function"]["name"].is_string() {
                        return Err(invalid(
                            format!("{at}.tool_calls[{k}].function.name"),
                            "must be a string",
                        ));
                    }
                }
            } else if content.is_null() {
                return Err(invalid(
                    format!("{at}.content"),
                    "an assistant message needs content or tool_calls",
                ));
            }
            Ok(())
        }
        "tool" => {
            if !message["tool_call_id"].is_string() {
                return Err(invalid(format!("{at}.tool_call_id"), "must be a string"));
            }
            text_parts(content, &format!("{at}.content"))
        }
        "function" => text_parts(content, &format!("{at}.content")),
        other => Err(invalid(
            format!("{at}.role"),
            format!("unknown role `{other}`: system, developer, user, assistant or tool"),
        )),
    }
}

fn validate_anthropic(message: &Value, role: &str, at: &str) -> Result<(), DomainError> {
    if role == "system" {
        // A system message between turns (the `mid-conversation-system`
        // beta Claude Code sends): carried as it is, never edited.
        return text_parts(
            message.get("content").unwrap_or(&Value::Null),
            &format!("{at}.content"),
        );
    }
    if !matches!(role, "user" | "assistant") {
        return Err(invalid(
            format!("{at}.role"),
            format!(
                "role `{role}`: Anthropic messages are `user` or `assistant` (the system prompt goes in `system`)"
            ),
        ));
    }
    let content = message.get("content").unwrap_or(&Value::Null);
    let blocks = match content {
        Value::String(_) => return Ok(()),
        Value::Array(blocks) => blocks,
        _ => {
            return Err(invalid(
                format!("{at}.content"),
                "must be a string or an array of blocks",
            ));
        }
    };
    for (k, block) in blocks.iter().enumerate() {
        let block_at = format!("{at}.content[{k}]");
        match block_type(block, &block_at)? {
            "text" if !block["text"].is_string() => {
                return Err(invalid(format!("{block_at}.text"), "must be a string"));
            }
            "tool_use" => {
                if role != "assistant" {
                    return Err(invalid(
                        block_at,
                        "tool_use blocks belong to assistant turns",
                    ));
                }
                if !block["id"].is_string() || !block["name"].is_string() {
                    return Err(invalid(block_at, "tool_use needs a string `id` and `name`"));
                }
            }
            "tool_result" => {
                if role != "user" {
                    return Err(invalid(block_at, "tool_result blocks belong to user turns"));
                }
                if !block["tool_use_id"].is_string() {
                    return Err(invalid(
                        format!("{block_at}.tool_use_id"),
                        "must be a string",
                    ));
                }
                if let Some(inner) = block.get("content") {
                    text_parts(inner, &format!("{block_at}.content"))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
