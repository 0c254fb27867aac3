//! Adapters to LLM endpoints the service itself calls: an OpenAI-compatible
//! chat-completions client behind the domain's [`SummaryModel`] port (LLM
//! summaries). (The proxy's upstream calls live with the proxy, `http::proxy`.)

use std::time::Duration;

use serde_json::json;

use crate::config::Secret;
use crate::domain::summarizer::SummaryModel;

/// `POST {url}/chat/completions` with a fixed model, temperature 0.
pub struct ChatCompletions {
    url: String,
    model: String,
    api_key: Option<Secret>,
    client: reqwest::Client,
}

impl ChatCompletions {
    /// A client of the endpoint at base `url`, each call bounded by `timeout`.
    pub fn new(
        url: &str,
        model: &str,
        api_key: Option<Secret>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            url: format!("{}/chat/completions", url.trim_end_matches('/')),
            model: model.to_owned(),
            api_key,
            client: reqwest::Client::builder().timeout(timeout).build()?,
        })
    }
}

#[async_trait::async_trait]
impl SummaryModel for ChatCompletions {
    async fn complete(&self, system: &str, user: &str) -> anyhow::Result<String> {
        let body = json!({
            "model": self.model,
            "temperature": 0,
            "max_tokens": 512,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        });
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let answer: serde_json::Value = request.send().await?.error_for_status()?.json().await?;
        answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("the answer has no choices[0].message.content"))
    }
}
