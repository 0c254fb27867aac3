//! What the model saw, read back from a request body of any of the three
//! APIs (Chat Completions, Responses, Anthropic Messages) as a list of
//! messages by role, each a list of labelled blocks of text — and that text
//! rendered with Cairn's markers highlighted and every `mem://` pointer
//! linked to the memory's lines.

use std::sync::LazyLock;

use maud::{Markup, html};
use regex::Regex;
use serde_json::Value;

use super::layout::clip;
use super::viewer::Viewer;

/// Characters of one block shown before the rest is left out.
const BLOCK_CHARS: usize = 6_000;

/// One message of the conversation.
#[derive(Debug, PartialEq)]
pub struct Turn {
    /// Its index in the request's message list (`None`: the system prompt
    /// given outside the list).
    pub index: Option<usize>,
    /// `system`, `user`, `assistant`, `tool`, …
    pub role: String,
    /// Its parts.
    pub blocks: Vec<Block>,
}

/// A part of a message.
#[derive(Debug, PartialEq)]
pub struct Block {
    /// What kind of part, when not plain text (`tool call: Bash`, `tool result`, `reasoning`).
    pub label: Option<String>,
    /// Its text.
    pub text: String,
}

impl Block {
    fn text(text: impl Into<String>) -> Self {
        Self {
            label: None,
            text: text.into(),
        }
    }

    fn labelled(label: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            label: Some(label.into()),
            text: text.into(),
        }
    }
}

/// The messages of a request body, in order, the system prompt first.
pub fn turns(body: &Value) -> Vec<Turn> {
    let mut out = Vec::new();
    for key in ["system", "instructions"] {
        let blocks = blocks_of(&body[key]);
        if !blocks.is_empty() {
            out.push(Turn {
                index: None,
                role: "system".to_owned(),
                blocks,
            });
        }
    }
    let list = if body["messages"].is_array() {
        &body["messages"]
    } else {
        &body["input"]
    };
    match list {
        Value::String(text) => out.push(Turn {
            index: Some(0),
            role: "user".to_owned(),
            blocks: vec![Block::text(text.clone())],
        }),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                out.push(turn(index, item));
            }
        }
        _ => {}
    }
    out
}

/// One item of `messages` or `input`.
fn turn(index: usize, item: &Value) -> Turn {
    let kind = item["type"].as_str().unwrap_or("message");
    let role = item["role"].as_str().map(str::to_owned);
    let mut blocks = Vec::new();
    match kind {
        "function_call" | "custom_tool_call" => {
            let name = item["name"].as_str().unwrap_or("?");
            let args = item.get("arguments").or_else(|| item.get("input"));
            blocks.push(Block::labelled(
                format!("tool call: {name}"),
                args.map(plain).unwrap_or_default(),
            ));
        }
        "function_call_output" | "custom_tool_call_output" => {
            let mut inner = blocks_of(&item["output"]);
            label_first(&mut inner, "tool result");
            blocks.extend(inner);
        }
        "reasoning" => {
            let summary = blocks_of(&item["summary"]);
            let text = summary
                .into_iter()
                .map(|b| b.text)
                .collect::<Vec<_>>()
                .join("\n");
            blocks.push(Block::labelled("reasoning", text));
        }
        "message" => {
            blocks.extend(blocks_of(&item["content"]));
            if let Some(calls) = item["tool_calls"].as_array() {
                for call in calls {
                    let name = call["function"]["name"].as_str().unwrap_or("?");
                    blocks.push(Block::labelled(
                        format!("tool call: {name}"),
                        plain(&call["function"]["arguments"]),
                    ));
                }
            }
        }
        other => blocks.push(Block::labelled(other.to_owned(), plain(item))),
    }
    let role = role.unwrap_or_else(|| match kind {
        "function_call_output" | "custom_tool_call_output" => "tool".to_owned(),
        _ => "assistant".to_owned(),
    });
    Turn {
        index: Some(index),
        role,
        blocks,
    }
}

/// The blocks of a `content` (or `system`, `output`) value: a string, or a
/// list of parts.
fn blocks_of(content: &Value) -> Vec<Block> {
    match content {
        Value::Null => Vec::new(),
        Value::String(text) => vec![Block::text(text.clone())],
        Value::Array(parts) => parts.iter().map(part).collect(),
        other => vec![Block::text(plain(other))],
    }
}

fn part(part: &Value) -> Block {
    let kind = part["type"].as_str().unwrap_or("text");
    match kind {
        "text" | "input_text" | "output_text" | "summary_text" => {
            Block::text(part["text"].as_str().unwrap_or_default())
        }
        "tool_use" | "server_tool_use" => Block::labelled(
            format!("tool call: {}", part["name"].as_str().unwrap_or("?")),
            plain(&part["input"]),
        ),
        "tool_result" => {
            let mut inner = blocks_of(&part["content"]);
            let text = inner
                .drain(..)
                .map(|b| b.text)
                .collect::<Vec<_>>()
                .join("\n");
            Block::labelled("tool result", text)
        }
        "thinking" => Block::labelled("thinking", part["thinking"].as_str().unwrap_or_default()),
        "image" | "input_image" | "image_url" => Block::labelled("image", "[image]"),
        other => Block::labelled(other.to_owned(), plain(part)),
    }
}

fn label_first(blocks: &mut [Block], label: &str) {
    if let Some(first) = blocks.first_mut() {
        first.label.get_or_insert_with(|| label.to_owned());
    }
}

/// A value as text: strings as they are, anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The names of the tools a request offered.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    t["name"]
                        .as_str()
                        .or_else(|| t["function"]["name"].as_str())
                        .or_else(|| t["type"].as_str())
                })
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `mem://` pointers: the id, and a line range when one is given.
static POINTER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"mem://([0-9a-f]{12,64})(?:#L(\d{1,12})(?:-(\d{1,12}))?)?").ok());

/// The page of a memory's lines a pointer names.
pub fn pointer_href(viewer: &Viewer, id: &str, line: Option<&str>) -> String {
    match line {
        Some(line) => viewer.href(&format!("/ui/memories/{id}?from={line}#L{line}")),
        None => viewer.href(&format!("/ui/memories/{id}")),
    }
}

/// Text with its `mem://` pointers as links (everything else escaped).
pub fn linked(viewer: &Viewer, text: &str) -> Markup {
    let mut pieces: Vec<(&str, Option<String>)> = Vec::new();
    let mut last = 0;
    if let Some(pointer) = POINTER.as_ref() {
        for caps in pointer.captures_iter(text) {
            if let (Some(whole), Some(id)) = (caps.get(0), caps.get(1)) {
                pieces.push((&text[last..whole.start()], None));
                let href = pointer_href(viewer, id.as_str(), caps.get(2).map(|m| m.as_str()));
                pieces.push((whole.as_str(), Some(href)));
                last = whole.end();
            }
        }
    }
    pieces.push((&text[last..], None));
    html! {
        @for (piece, href) in pieces {
            @if let Some(href) = href { a.pointer href=(href) { (piece) } } @else { (piece) }
        }
    }
}

/// One block: a marker highlighted, long text cut.
pub fn block(viewer: &Viewer, block: &Block) -> Markup {
    let marker = crate::domain::compress::marker::is_marker(&block.text);
    let (shown, left) = clip(&block.text, BLOCK_CHARS);
    html! {
        div.block.marker[marker] {
            @if let Some(label) = &block.label { p.label { (label) } }
            @if marker { p.label.marker-label { "Cairn marker: the original was offloaded" } }
            pre { (linked(viewer, shown)) }
            @if left > 0 { p.hint { "… " (left) " more characters not shown" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_bodies_read_as_messages_with_labelled_parts() {
        let body = json!({
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "content": [{"type": "text", "text": "a\nb"}]}]},
            ],
        });
        let t = turns(&body);
        assert_eq!(t.len(), 4);
        assert_eq!((t[0].index, t[0].role.as_str()), (None, "system"));
        assert_eq!(t[2].blocks[0].label.as_deref(), Some("tool call: Bash"));
        assert!(t[2].blocks[0].text.contains("\"command\": \"ls\""));
        assert_eq!(t[3].blocks[0], Block::labelled("tool result", "a\nb"));
        assert_eq!(t[3].index, Some(2));
    }

    #[test]
    fn responses_and_chat_items_keep_their_order_and_roles() {
        let body = json!({
            "instructions": "sys",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
                {"type": "function_call", "name": "shell", "arguments": "{\"cmd\":\"ls\"}"},
                {"type": "function_call_output", "output": "out"},
            ],
        });
        let t = turns(&body);
        let roles: Vec<&str> = t.iter().map(|t| t.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "assistant", "tool"]);
        assert_eq!(t[4].blocks[0], Block::labelled("tool result", "out"));
        let chat = json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "content": "r"},
        ]});
        let t = turns(&chat);
        assert_eq!(t[0].blocks, vec![Block::labelled("tool call: f", "{}")]);
        assert_eq!(t[1].blocks, vec![Block::text("r")]);
    }

    #[test]
    fn pointers_become_links_and_the_rest_stays_escaped() {
        let viewer = super::super::viewer::test_viewer();
        let id = "ab".repeat(32);
        let text = format!("<b>x</b> [cairn: out · mem://{id} · 3 lines] see mem://{id}#L7-9");
        let html = linked(&viewer, &text).into_string();
        assert!(html.starts_with("&lt;b&gt;x&lt;/b&gt;"), "{html}");
        assert!(
            html.contains(&format!("href=\"/ui/memories/{id}\"")),
            "{html}"
        );
        assert!(
            html.contains(&format!("href=\"/ui/memories/{id}?from=7#L7\"")),
            "{html}"
        );
        assert_eq!(html.matches("<a ").count(), 2);
    }
}
