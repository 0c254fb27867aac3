//! The few Cairn endpoints the benchmark calls.

use anyhow::{Context, bail};
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;

/// A server's base URL and the HTTP client to reach it.
#[derive(Clone)]
pub struct Api {
    /// Shared client (connection pool).
    pub client: reqwest::Client,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base_url: String,
}

/// The fields of a put answer the benchmark uses.
#[derive(Clone, Debug)]
pub struct Stored {
    /// The memory id (SHA-256 of the content, hex).
    pub id: String,
    /// Content length.
    pub bytes: u64,
    /// Bytes the content takes in storage.
    pub stored_bytes: u64,
    /// Lines of content.
    pub lines: u64,
    /// Whether the namespace already had this content.
    pub deduplicated: bool,
}

impl Stored {
    fn from_json(answer: &serde_json::Value) -> anyhow::Result<Self> {
        let number = |field: &str| {
            answer[field]
                .as_u64()
                .with_context(|| format!("put answer without `{field}`: {answer}"))
        };
        Ok(Self {
            id: answer["id"]
                .as_str()
                .with_context(|| format!("put answer without `id`: {answer}"))?
                .to_owned(),
            bytes: number("bytes")?,
            stored_bytes: number("stored_bytes")?,
            lines: number("lines")?,
            deduplicated: answer["deduplicated"].as_bool().unwrap_or(false),
        })
    }
}

impl Api {
    /// The absolute URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// `POST /v1/memories?type=TOOL_OUTPUT` with `body` as the raw content;
    /// fails unless the answer is 201 (a new memory).
    pub async fn put_raw(&self, body: reqwest::Body, content_type: &str) -> anyhow::Result<Stored> {
        let response = self
            .client
            .post(self.url("/v1/memories?type=TOOL_OUTPUT"))
            .header(CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .await
            .context("POST /v1/memories failed")?;
        let status = response.status();
        let answer = json_body(response).await?;
        if status != StatusCode::CREATED {
            bail!("POST /v1/memories answered {status}, not 201: {answer}");
        }
        Stored::from_json(&answer)
    }
}

/// Reads an answer's body as JSON, quoting the start of it when it is not.
pub async fn json_body(response: reqwest::Response) -> anyhow::Result<serde_json::Value> {
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .context("cannot read the answer body")?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("answer ({status}) is not JSON: {}", snippet(&bytes)))
}

/// The start of a body, as text, for error messages.
pub fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]);
    text.replace('\n', " ")
}
