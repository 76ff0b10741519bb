//! The OpenAI-compatible chat-completions author (llama.cpp server, vLLM, Ollama, hosted
//! APIs), streamed over SSE.
//!
//! One call makes at most `1 + retries` attempts inside one total deadline. An attempt that
//! fails before any text arrived (connect error, HTTP 5xx or 429, no first token in time, an
//! empty completion) is retried after a short backoff; one that fails after text arrived
//! (the stream cut mid-way) is not, since its text was already shown streaming. Whatever is
//! left when the attempts or the deadline run out is a [`ProviderError`]; a partial reply is
//! never returned as authored, and an empty one is never a pass.
//!
//! With constrained decoding on, the exported turn GBNF (or a given one) is sent as the
//! request's `grammar` field, which llama.cpp-style servers apply at the sampling step.
//! Servers without that field ignore or refuse it; `constrained` is recorded in
//! [`AuthorInfo`] either way, so the config id tells the arms apart.

use super::secret::ApiKey;
use super::sse::SseParser;
use super::{
    Author, AuthorFuture, AuthorInfo, DeltaSink, Outcome, Prompt, ProviderError, ProviderErrorKind,
    excerpt,
};
use crate::lang::grammar::{self, GrammarFormat, GrammarOptions};
use std::time::Duration;
use tokio::time::Instant;

/// Settings of an OpenAI-compatible author.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub temperature: f32,
    pub max_tokens: u32,
    /// Send the grammar as `grammar` (llama.cpp-style constrained decoding).
    pub constrained: bool,
    /// The GBNF to send when constrained; `None`: the exported turn grammar.
    pub grammar: Option<String>,
    pub api_key: Option<ApiKey>,
    /// Establishing the connection.
    pub connect_timeout: Duration,
    /// From sending the request to the first streamed text.
    pub first_token_timeout: Duration,
    /// The whole call, retries included.
    pub total_timeout: Duration,
    /// Extra attempts after a retryable failure.
    pub retries: u32,
    /// Wait before a retry (doubled each time).
    pub backoff: Duration,
}

impl OpenAiConfig {
    /// Defaults: temperature 0.7, 1024 tokens, unconstrained, 10 s connect, 60 s first token,
    /// 180 s total, 2 retries with 500 ms backoff.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            temperature: 0.7,
            max_tokens: 1024,
            constrained: false,
            grammar: None,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            first_token_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(180),
            retries: 2,
            backoff: Duration::from_millis(500),
        }
    }
}

/// The author.
pub struct OpenAiAuthor {
    cfg: OpenAiConfig,
    grammar: Option<String>,
    client: Result<reqwest::Client, String>,
}

/// One failed attempt: the error, and whether another attempt may fix it.
struct Failure {
    error: ProviderError,
    retryable: bool,
}

fn fail(kind: ProviderErrorKind, message: String, retryable: bool) -> Failure {
    Failure {
        error: ProviderError { kind, message },
        retryable,
    }
}

impl OpenAiAuthor {
    pub fn new(cfg: OpenAiConfig) -> Self {
        let grammar =
            if cfg.constrained {
                Some(cfg.grammar.clone().unwrap_or_else(|| {
                    grammar::export(GrammarFormat::Gbnf, GrammarOptions::default())
                }))
            } else {
                None
            };
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"));
        OpenAiAuthor {
            cfg,
            grammar,
            client,
        }
    }

    /// The JSON body of a request for `prompt`.
    pub fn request_body(&self, prompt: &Prompt) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": self.cfg.model,
            "messages": [
                {"role": "system", "content": prompt.system_text()},
                {"role": "user", "content": prompt.user_text()},
            ],
            "stream": true,
            "temperature": self.cfg.temperature,
            "max_tokens": self.cfg.max_tokens,
        });
        if let (Some(g), Some(obj)) = (&self.grammar, body.as_object_mut()) {
            obj.insert("grammar".into(), serde_json::Value::String(g.clone()));
        }
        body
    }

    fn redact(&self, s: String) -> String {
        match &self.cfg.api_key {
            Some(k) => k.redact(&s),
            None => s,
        }
    }

    async fn call(&self, prompt: &Prompt, deltas: Option<DeltaSink>) -> Outcome {
        let client = match &self.client {
            Ok(c) => c,
            Err(e) => return Outcome::error(ProviderErrorKind::Connect, e.clone()),
        };
        let deadline = Instant::now() + self.cfg.total_timeout;
        let body = self.request_body(prompt);
        let mut backoff = self.cfg.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = tokio::time::timeout_at(
                deadline,
                self.attempt(client, &body, deltas.as_ref(), deadline),
            )
            .await;
            let failure = match r {
                Ok(Ok(text)) => return Outcome::Reply(text),
                Ok(Err(f)) => f,
                Err(_) => fail(
                    ProviderErrorKind::Timeout,
                    format!(
                        "no complete reply within the total timeout of {:?}",
                        self.cfg.total_timeout
                    ),
                    false,
                ),
            };
            let more = failure.retryable
                && attempt <= self.cfg.retries
                && Instant::now() + backoff < deadline;
            if !more {
                let mut e = failure.error;
                e.message = self.redact(format!("{} (attempt {attempt})", e.message));
                return Outcome::ProviderError(e);
            }
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        body: &serde_json::Value,
        deltas: Option<&DeltaSink>,
        deadline: Instant,
    ) -> Result<String, Failure> {
        let url = format!(
            "{}/chat/completions",
            self.cfg.base_url.trim_end_matches('/')
        );
        let mut req = client
            .post(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(k) = &self.cfg.api_key {
            req = req.bearer_auth(k.expose_secret());
        }
        let first_by = (Instant::now() + self.cfg.first_token_timeout).min(deadline);
        let resp = match tokio::time::timeout_at(first_by, req.send()).await {
            Err(_) => {
                return Err(fail(
                    ProviderErrorKind::Timeout,
                    format!("no response within {:?}", self.cfg.first_token_timeout),
                    true,
                ));
            }
            Ok(Err(e)) => {
                let kind = if e.is_timeout() {
                    ProviderErrorKind::Timeout
                } else {
                    ProviderErrorKind::Connect
                };
                return Err(fail(kind, format!("request to {url} failed: {e}"), true));
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let text = tokio::time::timeout_at(first_by, resp.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let retryable = status.is_server_error() || status.as_u16() == 429;
            return Err(fail(
                ProviderErrorKind::Http,
                format!("HTTP {status} from {url}: {}", excerpt(text.trim(), 200)),
                retryable,
            ));
        }
        let is_sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            return self.whole_body(resp, first_by).await;
        }
        self.stream(resp, deltas, first_by).await
    }

    /// A server that ignored `stream: true` and answered with one JSON body.
    async fn whole_body(&self, resp: reqwest::Response, by: Instant) -> Result<String, Failure> {
        let text = match tokio::time::timeout_at(by, resp.text()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(fail(
                    ProviderErrorKind::StreamCut,
                    format!("reading the body: {e}"),
                    false,
                ));
            }
            Err(_) => {
                return Err(fail(
                    ProviderErrorKind::Timeout,
                    "the body did not arrive in time".into(),
                    true,
                ));
            }
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| {
            fail(
                ProviderErrorKind::BadResponse,
                format!("not a chat completion: {}", excerpt(&text, 200)),
                false,
            )
        })?;
        let content = v["choices"][0]["message"]["content"].as_str().unwrap_or("");
        if content.trim().is_empty() {
            return Err(fail(
                ProviderErrorKind::EmptyCompletion,
                "the completion was empty".into(),
                true,
            ));
        }
        Ok(content.to_string())
    }

    async fn stream(
        &self,
        mut resp: reqwest::Response,
        deltas: Option<&DeltaSink>,
        first_by: Instant,
    ) -> Result<String, Failure> {
        let mut sse = SseParser::default();
        let mut text = String::new();
        let mut finished = false;
        loop {
            let chunk = if text.is_empty() {
                match tokio::time::timeout_at(first_by, resp.chunk()).await {
                    Ok(c) => c,
                    Err(_) => {
                        return Err(fail(
                            ProviderErrorKind::Timeout,
                            format!("no first token within {:?}", self.cfg.first_token_timeout),
                            true,
                        ));
                    }
                }
            } else {
                // After the first token only the total deadline (enforced by the caller) applies.
                resp.chunk().await
            };
            let bytes = match chunk {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => {
                    return Err(fail(
                        ProviderErrorKind::StreamCut,
                        format!("the stream broke after {} chars: {e}", text.chars().count()),
                        text.is_empty(),
                    ));
                }
            };
            for data in sse.feed(&bytes) {
                if data.trim() == "[DONE]" {
                    finished = true;
                    continue;
                }
                let v: serde_json::Value = match serde_json::from_str(&data) {
                    Ok(v) => v,
                    Err(_) => {
                        return Err(fail(
                            ProviderErrorKind::BadResponse,
                            format!("a stream event is not JSON: {}", excerpt(&data, 120)),
                            false,
                        ));
                    }
                };
                if let Some(err) = v.get("error") {
                    return Err(fail(
                        ProviderErrorKind::BadResponse,
                        format!(
                            "the server reported an error: {}",
                            excerpt(&err.to_string(), 200)
                        ),
                        text.is_empty(),
                    ));
                }
                let choice = &v["choices"][0];
                if let Some(piece) = choice["delta"]["content"].as_str()
                    && !piece.is_empty()
                {
                    text.push_str(piece);
                    if let Some(d) = deltas {
                        let _ = d.send(piece.to_string());
                    }
                }
                if choice["finish_reason"].is_string() {
                    finished = true;
                }
            }
        }
        if !finished {
            return Err(fail(
                ProviderErrorKind::StreamCut,
                format!(
                    "the stream ended before the completion did ({} chars received, no finish)",
                    text.chars().count()
                ),
                text.is_empty(),
            ));
        }
        if text.trim().is_empty() {
            return Err(fail(
                ProviderErrorKind::EmptyCompletion,
                "the completion was empty".into(),
                true,
            ));
        }
        Ok(text)
    }
}

impl Author for OpenAiAuthor {
    fn info(&self) -> AuthorInfo {
        AuthorInfo {
            kind: "openai",
            model: self.cfg.model.clone(),
            constrained: self.cfg.constrained,
            temperature: Some(self.cfg.temperature),
        }
    }

    fn author<'a>(&'a mut self, prompt: &'a Prompt, deltas: Option<DeltaSink>) -> AuthorFuture<'a> {
        Box::pin(self.call(prompt, deltas))
    }
}
