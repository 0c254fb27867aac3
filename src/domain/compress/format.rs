//! The two message-list formats, OpenAI chat and Anthropic Messages, over
//! `serde_json::Value`: detection, shape validation with the path of the
//! offending value, and the text pieces a strategy may replace.

use serde_json::Value;

use super::marker;
pub use super::validate::validate;
use crate::domain::DomainError;

/// A provider's message-list format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat completions: roles system/developer/user/assistant/tool, `tool_calls`.
    OpenAi,
    /// Anthropic Messages: user/assistant turns, `tool_use` / `tool_result` blocks, `system` apart.
    Anthropic,
}

impl Format {
    /// The name clients use: `openai` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// Parses a format name.
    pub fn parse(name: &str) -> Result<Self, DomainError> {
        match name.to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            _ => Err(DomainError::field(
                "format",
                format!("unknown format `{name}`: use `openai` or `anthropic`"),
            )),
        }
    }
}

/// An invalid message list, naming the offending value.
pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> DomainError {
    DomainError::InvalidMessages {
        path: path.into(),
        message: message.into(),
    }
}

/// The format `messages` are in: the one named, else the one their shapes
/// show; with no telling shape, `system` means Anthropic and the model
/// family decides; otherwise the list is ambiguous (400).
pub fn detect(
    messages: &[Value],
    system: Option<&Value>,
    named: Option<&str>,
    model: Option<&str>,
) -> Result<Format, DomainError> {
    if let Some(name) = named {
        return Format::parse(name);
    }
    let mut openai: Option<String> = None;
    let mut anthropic: Option<String> = None;
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if matches!(role, "system" | "developer" | "tool" | "function")
            || message.get("tool_calls").is_some()
            || message.get("tool_call_id").is_some()
        {
            openai.get_or_insert(format!("messages[{i}]"));
        }
        if let Some(parts) = message.get("content").and_then(Value::as_array) {
            for (k, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("tool_use" | "tool_result" | "image" | "document" | "thinking") => {
                        anthropic.get_or_insert(format!("messages[{i}].content[{k}]"));
                    }
                    Some("image_url" | "input_audio" | "file" | "refusal") => {
                        openai.get_or_insert(format!("messages[{i}].content[{k}]"));
                    }
                    _ => {}
                }
            }
        }
    }
    match (openai, anthropic) {
        (Some(o), Some(a)) => Err(invalid(
            a,
            format!("mixes Anthropic blocks with OpenAI shapes (see {o}): name the `format`"),
        )),
        (Some(_), None) => Ok(Format::OpenAi),
        (None, Some(_)) => Ok(Format::Anthropic),
        (None, None) if system.is_some() => Ok(Format::Anthropic),
        (None, None) => {
            let model = model.unwrap_or("").to_ascii_lowercase();
            let model = model.rsplit('/').next().unwrap_or("");
            if model.starts_with("claude") {
                Ok(Format::Anthropic)
            } else if ["gpt", "o1", "o3", "o4", "chatgpt"]
                .iter()
                .any(|p| model.starts_with(p))
            {
                Ok(Format::OpenAi)
            } else {
                Err(DomainError::field(
                    "format",
                    "the messages fit both OpenAI and Anthropic: name the `format` (openai or anthropic) or a `model`",
                ))
            }
        }
    }
}

/// Where a replaceable text sits inside a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextAt {
    /// `content` is the string.
    Content,
    /// `content[k].text`.
    Part(usize),
    /// `content[k].content` (an Anthropic tool_result) is the string.
    ResultContent(usize),
    /// `content[k].content[j].text`.
    ResultPart(usize, usize),
}

/// One replaceable text of a message list.
#[derive(Clone, Debug)]
pub struct Piece {
    /// Index of the message.
    pub message: usize,
    /// Where in the message.
    pub at: TextAt,
    /// The message's role (`tool` for OpenAI tool messages).
    pub role: String,
    /// The tool whose result this is (None for plain texts).
    pub tool: Option<String>,
    /// Which tool result this belongs to, (message, block), for grouping.
    pub result: Option<(usize, usize)>,
}

impl Piece {
    /// True for tool results.
    pub fn is_tool_result(&self) -> bool {
        self.result.is_some()
    }
}

/// The text at `at` in `message`, if there is one.
pub fn text_at(message: &Value, at: TextAt) -> Option<&str> {
    let content = message.get("content")?;
    match at {
        TextAt::Content => content.as_str(),
        TextAt::Part(k) => content.get(k)?.get("text")?.as_str(),
        TextAt::ResultContent(k) => content.get(k)?.get("content")?.as_str(),
        TextAt::ResultPart(k, j) => content
            .get(k)?
            .get("content")?
            .get(j)?
            .get("text")?
            .as_str(),
    }
}

/// Replaces the text at `at` in `message` (which must hold one there).
pub fn set_text_at(message: &mut Value, at: TextAt, text: String) {
    let slot = match at {
        TextAt::Content => message.get_mut("content"),
        TextAt::Part(k) => message
            .get_mut("content")
            .and_then(|c| c.get_mut(k))
            .and_then(|p| p.get_mut("text")),
        TextAt::ResultContent(k) => message
            .get_mut("content")
            .and_then(|c| c.get_mut(k))
            .and_then(|p| p.get_mut("content")),
        TextAt::ResultPart(k, j) => message
            .get_mut("content")
            .and_then(|c| c.get_mut(k))
            .and_then(|p| p.get_mut("content"))
            .and_then(|c| c.get_mut(j))
            .and_then(|p| p.get_mut("text")),
    };
    if let Some(slot) = slot {
        *slot = Value::String(text);
    }
}

/// Every replaceable text of the list, in order, with the tool it came from.
pub fn pieces(format: Format, messages: &[Value]) -> Vec<Piece> {
    let names = tool_names(format, messages);
    let mut out = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("").to_owned();
        let content = &message["content"];
        let tool = match format {
            Format::OpenAi if role == "tool" => Some(
                message["tool_call_id"]
                    .as_str()
                    .and_then(|id| names.iter().find(|(n, _)| n == id))
                    .map_or_else(|| "tool".to_owned(), |(_, name)| name.clone()),
            ),
            _ => None,
        };
        let result = tool.as_ref().map(|_| (i, 0));
        let piece = |at, tool: Option<String>, result| Piece {
            message: i,
            at,
            role: role.clone(),
            tool,
            result,
        };
        match content {
            Value::String(_) => out.push(piece(TextAt::Content, tool.clone(), result)),
            Value::Array(parts) => {
                for (k, part) in parts.iter().enumerate() {
                    match part["type"].as_str() {
                        Some("text") => out.push(piece(TextAt::Part(k), tool.clone(), result)),
                        Some("tool_result") => {
                            let name = part["tool_use_id"]
                                .as_str()
                                .and_then(|id| names.iter().find(|(n, _)| n == id))
                                .map_or_else(|| "tool".to_owned(), |(_, name)| name.clone());
                            match &part["content"] {
                                Value::String(_) => out.push(piece(
                                    TextAt::ResultContent(k),
                                    Some(name),
                                    Some((i, k)),
                                )),
                                Value::Array(inner) => {
                                    for (j, block) in inner.iter().enumerate() {
                                        if block["type"] == "text" {
                                            out.push(piece(
                                                TextAt::ResultPart(k, j),
                                                Some(name.clone()),
                                                Some((i, k)),
                                            ));
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// (call id, tool name) of every tool call in the list.
fn tool_names(format: Format, messages: &[Value]) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for message in messages {
        match format {
            Format::OpenAi => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    if let (Some(id), Some(name)) =
                        (call["id"].as_str(), call["function"]["name"].as_str())
                    {
                        names.push((id.to_owned(), name.to_owned()));
                    }
                }
            }
            Format::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use"
                        && let (Some(id), Some(name)) =
                            (block["id"].as_str(), block["name"].as_str())
                    {
                        names.push((id.to_owned(), name.to_owned()));
                    }
                }
            }
        }
    }
    names
}

/// True when the message is a Cairn marker (a fold summary or a drop notice).
pub fn is_marker_message(message: &Value) -> bool {
    match &message["content"] {
        Value::String(text) => marker::is_marker(text),
        Value::Array(parts) => parts
            .iter()
            .find(|p| p["type"] == "text")
            .and_then(|p| p["text"].as_str())
            .is_some_and(marker::is_marker),
        _ => false,
    }
}

/// Index of the last message holding an Anthropic `cache_control` marker anywhere inside.
pub fn last_cache_control(messages: &[Value]) -> Option<usize> {
    fn has(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.contains_key("cache_control") || map.values().any(has),
            Value::Array(items) => items.iter().any(has),
            _ => false,
        }
    }
    messages.iter().rposition(has)
}

/// All the text of a message, for error and importance checks.
pub fn message_text(message: &Value) -> String {
    fn collect(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            Value::Object(map) => {
                for (key, v) in map {
                    if matches!(key.as_str(), "text" | "content") {
                        collect(v, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    collect(&message["content"], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes_tell_the_format() {
        let openai = [json!({"role": "system", "content": "be brief"})];
        assert_eq!(detect(&openai, None, None, None).unwrap(), Format::OpenAi);
        let anthropic = [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]})];
        assert_eq!(
            detect(&anthropic, None, None, None).unwrap(),
            Format::Anthropic
        );
        let plain = [json!({"role": "user", "content": "hi"})];
        assert!(detect(&plain, None, None, None).is_err());
        assert_eq!(
            detect(&plain, None, None, Some("claude-sonnet-4")).unwrap(),
            Format::Anthropic
        );
        assert_eq!(
            detect(&plain, None, Some("openai"), None).unwrap(),
            Format::OpenAi
        );
    }

    #[test]
    fn bad_shapes_name_their_path() {
        let messages = [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "tool", "content": "x"}),
        ];
        let err = validate(Format::OpenAi, &messages, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "messages[1].tool_call_id: must be a string"
        );
        let messages = [json!({"role": "user", "content": [{"text": "no type"}]})];
        let err = validate(Format::Anthropic, &messages, None).unwrap_err();
        assert!(err.to_string().starts_with("messages[0].content[0].type"));
    }

    #[test]
    fn pieces_know_their_tool() {
        let messages = [
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "pytest", "input": {}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "3 failed"}]},
                {"type": "text", "text": "see above"}]}),
        ];
        let found = pieces(Format::Anthropic, &messages);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].at, TextAt::ResultPart(0, 0));
        assert_eq!(found[0].tool.as_deref(), Some("pytest"));
        assert_eq!(text_at(&messages[1], found[0].at), Some("3 failed"));
        assert!(!found[1].is_tool_result());
    }
}
