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
//! Only `finish_reason: "stop"` ends a reply normally; anything else is a
//! [`Completion::CutOff`] that says why ([`CutReason`]): another finish reason (`length` at
//! the output-token limit, `content_filter`, ...) is one the provider stopped, which the
//! router makes *truncated* even when the prefix parses; a stream that ended (`[DONE]`) or
//! a non-streamed body without a finish reason ended unsaid, and the session takes it as
//! whole; a stream that stopped after text with neither (end of body, a broken connection)
//! broke mid-reply, and the session makes it a `stream-cut` provider error, not retried
//! (its text was shown streaming). A server that answers 429 or 503 with `Retry-After: N`
//! (seconds, or an HTTP date) is retried after `N` seconds, at most [`MAX_RETRY_AFTER`] and never past the
//! total deadline. Bytes that are not UTF-8 are a `bad-response` provider error, never
//! decoded lossily. The URL shown in any message has no userinfo and no query values, and
//! every message passes the key's redaction.
//!
//! With constrained decoding on, the exported turn GBNF (or a given one) is sent as the
//! request's `grammar` field, which llama.cpp-style servers apply at the sampling step.
//! Servers without that field ignore or refuse it; `constrained` is recorded in
//! [`AuthorInfo`] either way, so the config id tells the arms apart.

use super::secret::ApiKey;
use super::sse::{SseError, SseParser};
use super::{
    Author, AuthorFuture, AuthorInfo, Completion, Cut, CutReason, DeltaSink, Prompt, ProviderError,
    ProviderErrorKind, excerpt,
};
use crate::lang::grammar::{self, GrammarFormat, GrammarOptions};
use crate::limits::MAX_RESPONSE_BYTES;
use std::time::Duration;
use tokio::time::Instant;

/// The longest `Retry-After` the author honours; a server asking for more is not retried.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// The endpoint of `api` under `base`: `/chat/completions` (or `/completions`) is appended
/// to the base URL's path, and a query string (`?api_key=...`) stays after it. A base that
/// already ends in `/chat/completions` or `/completions` is the endpoint itself (that tail
/// is replaced by the one asked for): the path is never doubled.
pub(crate) fn endpoint_for(base: &str, api: Api) -> Result<reqwest::Url, String> {
    let mut url = reqwest::Url::parse(base.trim()).map_err(|e| {
        format!(
            "the author URL {} is not a URL: {e}",
            shown_text(base.trim())
        )
    })?;
    let mut root = url.path().trim_end_matches('/').to_string();
    for tail in ["/chat/completions", "/completions"] {
        if let Some(r) = root.strip_suffix(tail) {
            root = r.to_string();
            break;
        }
    }
    let path = format!("{root}{}", api.path());
    url.set_path(&path);
    Ok(url)
}

/// Which OpenAI-compatible API a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/chat/completions`: system and user messages (instruction-tuned models).
    Chat,
    /// `/completions`: one prompt document the model continues (base models; the
    /// completion-style profile).
    Completions,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Completions => "/completions",
        }
    }
}

/// The largest repair note (bytes) a re-ask carries, whatever the output budget.
pub const REASK_NOTE_CAP: usize = 1536;

/// The repair note bound for an output budget of `max_tokens`: at most half of it, and at
/// most [`REASK_NOTE_CAP`] bytes. A re-ask asks for `max_tokens` less the note's bytes (no
/// tokenizer makes more tokens than bytes), so its prompt plus its output never exceed what
/// the first ask's did: a re-ask fits any context the first ask fit.
pub fn reask_note_bound(max_tokens: u32) -> usize {
    (max_tokens as usize / 2).min(REASK_NOTE_CAP)
}

/// A URL as messages may show it: no userinfo, and the query's values replaced.
pub(crate) fn shown_url(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if u.query().is_some() {
        u.set_query(Some("[redacted]"));
    }
    u.set_fragment(None);
    u.to_string()
}

/// [`shown_url`] for a text that may not parse: everything between `://` and the last `@`
/// of the authority, and everything from `?`, hidden.
fn shown_text(s: &str) -> String {
    match reqwest::Url::parse(s) {
        Ok(u) => shown_url(&u),
        Err(_) => {
            let s = s.split(['?', '#']).next().unwrap_or("");
            match s.split_once("://") {
                Some((scheme, rest)) => {
                    let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                    let host = auth.rsplit('@').next().unwrap_or("");
                    format!("{scheme}://{host}{path}")
                }
                None => s.to_string(),
            }
        }
    }
}

/// `Retry-After` as delta-seconds or as an HTTP date (RFC 9110 §10.2.3: the wait is the
/// date less now, zero for a date already past); anything else is ignored and the backoff
/// applies.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    retry_after_value(v, std::time::SystemTime::now())
}

/// [`retry_after`] of one header value at `now`.
fn retry_after_value(v: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `now + d`, or a deadline years away when that is past what the clock can hold: a
/// timeout that large is no deadline. (`Instant + Duration` panics on overflow: a
/// configured `total_timeout` of `u64::MAX` seconds took the process down at the first
/// call; the flags are bounded too, `limits::MAX_TIMEOUT_SECS`.)
pub(crate) fn later(now: Instant, d: Duration) -> Instant {
    /// Thirty years: as far as tokio's own "no deadline" (`Instant::far_future`).
    const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR))
        .unwrap_or(now)
}

/// The text of a completion's first choice: `message.content` (a chat body),
/// `delta.content` (a chat stream's chunk, `part` names which) or `text` (`/completions`).
/// `Ok(None)` when there is none (no choices, a role-only delta, `null`); `Err` naming the
/// field when the body is there but not a completion's shape (`"content": 5`, `"choices":
/// {}`, `"finish_reason": 7` were read as "the completion was empty" and retried).
fn choice_text<'a>(v: &'a serde_json::Value, part: &str) -> Result<Option<&'a str>, String> {
    use crate::market::tape::json_kind as kind;
    use serde_json::Value;
    match &v["choices"] {
        Value::Null | Value::Array(_) => {}
        other => return Err(format!("`choices` is {}, not a list", kind(other))),
    }
    let choice = &v["choices"][0];
    match choice {
        Value::Null | Value::Object(_) => {}
        other => return Err(format!("`choices[0]` is {}, not an object", kind(other))),
    }
    match &choice["finish_reason"] {
        Value::Null | Value::String(_) => {}
        other => {
            return Err(format!(
                "`choices[0].finish_reason` is {}, not text",
                kind(other)
            ));
        }
    }
    for (field, name) in [
        (&choice[part]["content"], format!("{part}.content")),
        (&choice["text"], "text".to_string()),
    ] {
        match field {
            Value::Null => {}
            Value::String(t) => return Ok(Some(t)),
            other => return Err(format!("`choices[0].{name}` is {}, not text", kind(other))),
        }
    }
    Ok(None)
}

/// Why a `Retry-After` ended the call, quoting the header as the server sent it (a wait
/// of `99999999999999999999999` seconds was reported as "retry after 1000000s", the value
/// it was clamped to when read): beyond [`MAX_RETRY_AFTER`], or past the call's deadline.
fn asked_too_long(wait: Duration, raw: &str, total: Duration) -> String {
    let why = if wait > MAX_RETRY_AFTER {
        format!("more than the {}s kestrel waits", MAX_RETRY_AFTER.as_secs())
    } else {
        format!("past the total timeout of {}s (--timeout)", total.as_secs())
    };
    format!("; the server asked to retry after `Retry-After: {raw}`, {why}: not retried")
}

/// Output tokens one request may generate unless `--max-tokens` says otherwise: a Kestrel
/// turn is 50–300 tokens, and 512 at 15–25 tokens/s is 20–35 s on a local CPU.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Seconds to the first streamed token unless `--first-token-timeout` says otherwise: a
/// CPU reads a 3,000-token prompt in well over a minute.
pub const DEFAULT_FIRST_TOKEN_SECS: u64 = 180;
/// Seconds one call (every retry) may take unless `--timeout` says otherwise.
pub const DEFAULT_TOTAL_SECS: u64 = 300;

/// Settings of an OpenAI-compatible author.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub temperature: f64,
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
    /// Which API to call; the completion-style profile switches a call to
    /// [`Api::Completions`] whatever this says.
    pub api: Api,
    /// Wait before a retry (doubled each time).
    pub backoff: Duration,
}

impl OpenAiConfig {
    /// Defaults, chosen for a small local model on a loaded CPU (15–25 tokens/s, a few
    /// thousand prompt tokens to read before the first token): temperature 0.7, 512 output
    /// tokens ([`DEFAULT_MAX_TOKENS`]), unconstrained, 10 s connect, 180 s to the first token
    /// ([`DEFAULT_FIRST_TOKEN_SECS`]), 300 s total, 2 retries with 500 ms backoff.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            temperature: 0.7,
            max_tokens: DEFAULT_MAX_TOKENS,
            constrained: false,
            grammar: None,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            first_token_timeout: Duration::from_secs(DEFAULT_FIRST_TOKEN_SECS),
            total_timeout: Duration::from_secs(DEFAULT_TOTAL_SECS),
            retries: 2,
            api: Api::Chat,
            backoff: Duration::from_millis(500),
        }
    }
}

/// The author.
pub struct OpenAiAuthor {
    cfg: OpenAiConfig,
    grammar: Option<String>,
    client: Result<reqwest::Client, String>,
    /// The failed tries the last call retried (see [`Author::take_retries`]).
    retried: std::sync::Mutex<Vec<String>>,
    /// What the server reported the last call cost (see [`Author::take_usage`]).
    usage: std::sync::Mutex<Spent>,
}

/// The provider's `usage` of one call: the tries done, and the try in flight (a stream
/// may repeat its usage on several events; its last one counts).
#[derive(Default)]
struct Spent {
    call: Option<super::Usage>,
    this_try: Option<super::Usage>,
}

/// One failed attempt: the error, whether another attempt may fix it, and how long the
/// server asked to wait first (`Retry-After`, read, and the header as the server sent it:
/// a wait past what a `Duration` holds is read as a bound, never quoted as asked).
struct Failure {
    error: ProviderError,
    retryable: bool,
    wait: Option<Duration>,
    asked: Option<String>,
}

fn fail(kind: ProviderErrorKind, message: String, retryable: bool) -> Failure {
    Failure {
        error: ProviderError { kind, message },
        retryable,
        wait: None,
        asked: None,
    }
}

/// Bytes as UTF-8, or a `bad-response` failure (never decoded lossily).
fn utf8(bytes: Vec<u8>, what: &str) -> Result<String, Failure> {
    String::from_utf8(bytes).map_err(|e| {
        fail(
            ProviderErrorKind::BadResponse,
            format!(
                "{what} is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            false,
        )
    })
}

/// A response body, read until its end or `cap` bytes: the bytes and whether that was its end
/// (past `cap` the rest is not read).
async fn body_upto(resp: &mut reqwest::Response, cap: usize) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    while let Some(c) = resp.chunk().await? {
        if out.len() + c.len() > cap {
            let room = cap - out.len();
            out.extend_from_slice(&c[..room]);
            return Ok((out, false));
        }
        out.extend_from_slice(&c);
    }
    Ok((out, true))
}

/// The end of a completion that ended (`[DONE]`, or a whole body): `stop` is a whole
/// reply, another finish reason one the provider stopped, none one that ended unsaid.
fn finished(text: String, finish_reason: Option<&str>) -> Completion {
    match finish_reason {
        Some("stop") => Completion::Reply(text),
        Some(r) => Completion::CutOff(Cut::new(text, CutReason::Stopped(r.to_string()))),
        None => Completion::CutOff(Cut::new(text, CutReason::Unsaid)),
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
            retried: std::sync::Mutex::new(Vec::new()),
            usage: std::sync::Mutex::new(Spent::default()),
        }
    }

    /// Note the `usage` a response body or stream event carries, if any.
    fn note_usage(&self, v: &serde_json::Value) {
        if let Some(u) = v.get("usage").and_then(super::Usage::from_json)
            && let Ok(mut s) = self.usage.lock()
        {
            s.this_try = Some(u);
        }
    }

    /// The try in flight is over: its usage joins the call's.
    fn end_try(&self) {
        if let Ok(mut s) = self.usage.lock()
            && let Some(u) = s.this_try.take()
        {
            s.call = Some(s.call.unwrap_or_default().plus(u));
        }
    }

    /// The API a call for `prompt` uses: `/completions` for a completion-style profile.
    pub fn api_for(&self, prompt: &Prompt) -> Api {
        if prompt.completion {
            Api::Completions
        } else {
            self.cfg.api
        }
    }

    /// The output tokens a request for `prompt` may generate: `max_tokens`, less the bytes
    /// of a re-ask's repair note (see [`reask_note_bound`]), never below 1.
    pub fn max_tokens_for(&self, prompt: &Prompt) -> u32 {
        let note = prompt.repair.as_deref().map_or(0, str::len);
        let note = u32::try_from(note).unwrap_or(u32::MAX);
        self.cfg.max_tokens.saturating_sub(note).max(1)
    }

    /// The JSON body of a request for `prompt`.
    pub fn request_body(&self, prompt: &Prompt) -> serde_json::Value {
        let mut body = match self.api_for(prompt) {
            Api::Chat => serde_json::json!({
                "model": self.cfg.model,
                "messages": [
                    {"role": "system", "content": prompt.system_text()},
                    {"role": "user", "content": prompt.user_text()},
                ],
                "stream": true,
                "temperature": self.cfg.temperature,
                "max_tokens": self.max_tokens_for(prompt),
            }),
            Api::Completions => serde_json::json!({
                "model": self.cfg.model,
                "prompt": prompt.completion_text(),
                "stop": [super::COMPLETION_STOP],
                "stream": true,
                "temperature": self.cfg.temperature,
                "max_tokens": self.max_tokens_for(prompt),
            }),
        };
        if let (Some(g), Some(obj)) = (&self.grammar, body.as_object_mut()) {
            obj.insert("grammar".into(), serde_json::Value::String(g.clone()));
        }
        body
    }

    fn redact(&self, s: String) -> String {
        let s = match &self.cfg.api_key {
            Some(k) => k.redact(&s),
            None => s,
        };
        // The URL's own userinfo is a secret too.
        match reqwest::Url::parse(self.cfg.base_url.trim()) {
            Ok(u) => [u.password().unwrap_or(""), u.username()]
                .into_iter()
                .filter(|p| p.len() >= 3)
                .fold(s, |s, p| ApiKey::new(p).redact(&s)),
            Err(_) => s,
        }
    }

    async fn call(&self, prompt: &Prompt, deltas: Option<DeltaSink>) -> Completion {
        let client = match &self.client {
            Ok(c) => c,
            Err(e) => return Completion::error(ProviderErrorKind::Connect, e.clone()),
        };
        let deadline = later(Instant::now(), self.cfg.total_timeout);
        let body = self.request_body(prompt);
        let api = self.api_for(prompt);
        if let Ok(mut r) = self.retried.lock() {
            r.clear();
        }
        if let Ok(mut u) = self.usage.lock() {
            *u = Spent::default();
        }
        let mut backoff = self.cfg.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = tokio::time::timeout_at(
                deadline,
                self.attempt(client, api, &body, deltas.as_ref(), deadline),
            )
            .await;
            self.end_try();
            let failure = match r {
                Ok(Ok(done)) => return done,
                Ok(Err(f)) => f,
                Err(_) => fail(
                    ProviderErrorKind::Timeout,
                    format!(
                        "no complete reply within the total timeout of {}s (--timeout)",
                        self.cfg.total_timeout.as_secs()
                    ),
                    false,
                ),
            };
            // The server's Retry-After replaces the backoff when it is within bounds; one
            // asking for longer than MAX_RETRY_AFTER or past the deadline ends the call.
            let wait = failure.wait.unwrap_or(backoff);
            let more = failure.retryable
                && attempt <= self.cfg.retries
                && wait <= MAX_RETRY_AFTER
                && later(Instant::now(), wait) < deadline;
            if !more {
                let mut e = failure.error;
                let asked = match (failure.wait, &failure.asked) {
                    (Some(w), Some(raw)) if failure.retryable && attempt <= self.cfg.retries => {
                        asked_too_long(w, raw, self.cfg.total_timeout)
                    }
                    _ => String::new(),
                };
                e.message = self.redact(format!("{}{asked} (attempt {attempt})", e.message));
                return Completion::ProviderError(e);
            }
            let line = self.redact(format!(
                "try {attempt} failed, retried after {} ms: {}",
                wait.as_millis(),
                failure.error
            ));
            if let Ok(mut r) = self.retried.lock() {
                r.push(line);
            }
            tokio::time::sleep(wait).await;
            // The retry streams a reply anew: what was streamed of the failed try goes.
            if let Some(d) = deltas.as_ref() {
                let _ = d.send(super::NEW_ATTEMPT.to_string());
            }
            backoff = backoff.saturating_mul(2);
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        api: Api,
        body: &serde_json::Value,
        deltas: Option<&DeltaSink>,
        deadline: Instant,
    ) -> Result<Completion, Failure> {
        let url = endpoint_for(&self.cfg.base_url, api)
            .map_err(|m| fail(ProviderErrorKind::Connect, m, false))?;
        let shown = shown_url(&url);
        let mut req = client
            .post(url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(k) = &self.cfg.api_key {
            req = req.bearer_auth(k.expose_secret());
        }
        let first_by = later(Instant::now(), self.cfg.first_token_timeout).min(deadline);
        let resp = match tokio::time::timeout_at(first_by, req.send()).await {
            Err(_) => {
                return Err(fail(
                    ProviderErrorKind::Timeout,
                    format!(
                        "no response within the first-token timeout of {}s (--first-token-timeout)",
                        self.cfg.first_token_timeout.as_secs()
                    ),
                    true,
                ));
            }
            Ok(Err(e)) => {
                let kind = if e.is_timeout() {
                    ProviderErrorKind::Timeout
                } else {
                    ProviderErrorKind::Connect
                };
                let e = e.without_url();
                return Err(fail(kind, format!("request to {shown} failed: {e}"), true));
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let wait = retry_after(resp.headers());
            let asked = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|v| excerpt(v.trim(), 64));
            // Only its start is quoted: a huge error page is not read whole.
            let mut resp = resp;
            let bytes = tokio::time::timeout_at(first_by, body_upto(&mut resp, 64 * 1024))
                .await
                .ok()
                .and_then(Result::ok)
                .map(|(b, _)| b)
                .unwrap_or_default();
            // Redact before cutting: an excerpt must not keep a prefix of the key.
            let text = self.redact(String::from_utf8_lossy(&bytes).into_owned());
            let retryable = status.is_server_error() || status.as_u16() == 429;
            let mut f = fail(
                ProviderErrorKind::Http,
                format!("HTTP {status} from {shown}: {}", excerpt(text.trim(), 200)),
                retryable,
            );
            f.wait = wait;
            f.asked = asked;
            return Err(f);
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
    async fn whole_body(
        &self,
        resp: reqwest::Response,
        by: Instant,
    ) -> Result<Completion, Failure> {
        let mut resp = resp;
        let text = match tokio::time::timeout_at(by, body_upto(&mut resp, MAX_RESPONSE_BYTES)).await
        {
            Ok(Ok((_, false))) => {
                return Err(fail(
                    ProviderErrorKind::BadResponse,
                    format!(
                        "the response body is over {} MiB (a turn is at most 256 KiB)",
                        MAX_RESPONSE_BYTES / (1024 * 1024)
                    ),
                    false,
                ));
            }
            Ok(Ok((t, true))) => utf8(t, "the response body")?,
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
                format!(
                    "not a chat completion: {}",
                    excerpt(&self.redact(text.clone()), 200)
                ),
                false,
            )
        })?;
        self.note_usage(&v);
        // A gateway's `200 {"error": {...}}` says why there is no completion: its words,
        // not "the completion was empty".
        if let Some(f) = self.reported_error(&v, true) {
            return Err(f);
        }
        let choice = &v["choices"][0];
        let content = choice_text(&v, "message")
            .map_err(|why| {
                fail(
                    ProviderErrorKind::BadResponse,
                    format!("not a chat completion: {why}"),
                    false,
                )
            })?
            .unwrap_or("");
        if content.trim().is_empty() {
            return Err(fail(
                ProviderErrorKind::EmptyCompletion,
                "the completion was empty".into(),
                true,
            ));
        }
        // Past the reply limit it is refused by size, as a streamed one is.
        let mut kept = super::Bounded::default();
        kept.push(content.as_bytes());
        if let Err(oversized) = kept.finish(|h| h) {
            return Ok(oversized);
        }
        Ok(finished(
            content.to_string(),
            choice["finish_reason"].as_str(),
        ))
    }

    /// The error object a server sent in place of a completion (`{"error": {...}}`, in a
    /// whole body or a stream event), as a `bad-response` failure quoting it (redacted,
    /// cut to 200 bytes): `retryable` when no text has arrived yet. `None`: no error.
    fn reported_error(&self, v: &serde_json::Value, retryable: bool) -> Option<Failure> {
        let err = v.get("error").filter(|e| !e.is_null())?;
        Some(fail(
            ProviderErrorKind::BadResponse,
            format!(
                "the server reported an error: {}",
                excerpt(&self.redact(err.to_string()), 200)
            ),
            retryable,
        ))
    }

    async fn stream(
        &self,
        mut resp: reqwest::Response,
        deltas: Option<&DeltaSink>,
        first_by: Instant,
    ) -> Result<Completion, Failure> {
        let mut sse = SseParser::default();
        // The reply, kept up to the reply limit and counted past it (`Bounded`).
        let mut text = super::Bounded::default();
        let mut finish: Option<String> = None;
        // Did the stream end (`[DONE]`), or only stop (end of body, a broken connection)?
        let mut ended = false;
        'read: loop {
            let chunk = if text.is_empty() {
                match tokio::time::timeout_at(first_by, resp.chunk()).await {
                    Ok(c) => c,
                    Err(_) => {
                        return Err(fail(
                            ProviderErrorKind::Timeout,
                            format!(
                                "no first token within the first-token timeout of {}s (--first-token-timeout)",
                                self.cfg.first_token_timeout.as_secs()
                            ),
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
                Ok(None) => break 'read,
                // Text arrived, then the connection broke: a cut-off reply (below).
                Err(_) if !text.is_empty() => break 'read,
                Err(e) => {
                    return Err(fail(
                        ProviderErrorKind::StreamCut,
                        format!("the stream broke before any text: {}", e.without_url()),
                        true,
                    ));
                }
            };
            let events = sse.feed(&bytes).map_err(|e| match e {
                SseError::NotUtf8(at) => fail(
                    ProviderErrorKind::BadResponse,
                    format!("the stream is not UTF-8 (an event line with an invalid byte at offset {at})"),
                    false,
                ),
                SseError::TooLong => fail(
                    ProviderErrorKind::BadResponse,
                    format!(
                        "a stream line or event is over {} MiB (a turn is at most 256 KiB)",
                        MAX_RESPONSE_BYTES / (1024 * 1024)
                    ),
                    false,
                ),
            })?;
            for data in events {
                if data.trim() == "[DONE]" {
                    // The end of the stream: the server ended it.
                    ended = true;
                    break 'read;
                }
                let v: serde_json::Value = match serde_json::from_str(&data) {
                    Ok(v) => v,
                    Err(_) => {
                        return Err(fail(
                            ProviderErrorKind::BadResponse,
                            format!(
                                "a stream event is not JSON: {}",
                                excerpt(&self.redact(data.clone()), 120)
                            ),
                            false,
                        ));
                    }
                };
                // The usage arrives on the last chunk (`stream_options.include_usage`, or a
                // server's own habit), often with no choices; it is read when it is there.
                self.note_usage(&v);
                if let Some(f) = self.reported_error(&v, text.is_empty()) {
                    return Err(f);
                }
                let choice = &v["choices"][0];
                // Chat streams carry `delta.content`; `/completions` streams carry `text`.
                let piece = choice_text(&v, "delta").map_err(|why| {
                    fail(
                        ProviderErrorKind::BadResponse,
                        format!("a stream event is not a chat completion chunk: {why}"),
                        false,
                    )
                })?;
                if let Some(piece) = piece
                    && !piece.is_empty()
                {
                    let kept = text.push(piece.as_bytes()).len();
                    if let Some(d) = deltas
                        && kept > 0
                    {
                        // (Cut at the limit on a character boundary: what was kept, shown.)
                        let _ = d.send(crate::limits::prefix(piece, kept).to_string());
                    }
                }
                if let Some(r) = choice["finish_reason"].as_str() {
                    finish = Some(r.to_string());
                }
            }
        }
        let text = match text.finish(|h| h) {
            // Whole pieces of text, so whole characters.
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            Err(oversized) => return Ok(oversized),
        };
        if text.trim().is_empty() {
            return Err(if finish.is_none() {
                fail(
                    ProviderErrorKind::StreamCut,
                    "the stream ended before any text and without a finish".into(),
                    true,
                )
            } else {
                fail(
                    ProviderErrorKind::EmptyCompletion,
                    "the completion was empty".into(),
                    true,
                )
            });
        }
        if finish.is_none() && !ended {
            // Text, then the stream stopped with neither a finish reason nor `[DONE]`.
            return Ok(Completion::CutOff(Cut::new(text, CutReason::Broken)));
        }
        Ok(finished(text, finish.as_deref()))
    }
}

impl Author for OpenAiAuthor {
    fn info(&self) -> AuthorInfo {
        AuthorInfo {
            kind: "openai",
            model: self.cfg.model.clone(),
            constrained: self.cfg.constrained,
            temperature: Some(self.cfg.temperature),
            max_tokens: Some(self.cfg.max_tokens),
            server: Some(shown_text(self.cfg.base_url.trim())),
        }
    }

    fn take_retries(&mut self) -> Vec<String> {
        self.retried
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    fn take_usage(&mut self) -> Option<super::Usage> {
        self.usage.lock().ok().and_then(|mut s| s.call.take())
    }

    fn author<'a>(&'a mut self, prompt: &'a Prompt, deltas: Option<DeltaSink>) -> AuthorFuture<'a> {
        Box::pin(self.call(prompt, deltas))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777 s after the epoch (RFC 9110's example).
        let at = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let now = at - Duration::from_secs(7);
        assert_eq!(retry_after_value("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after_value(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after_value("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        // The obsolete forms RFC 9110 still asks a recipient to read.
        assert_eq!(
            retry_after_value("Sunday, 06-Nov-94 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after_value("Sun Nov  6 08:49:37 1994", now),
            Some(Duration::from_secs(7))
        );
        // A date already past is no wait; garbage and negatives are ignored.
        assert_eq!(
            retry_after_value("Sun, 06 Nov 1994 08:49:37 GMT", SystemTime::now()),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_value("soon", now), None);
        assert_eq!(retry_after_value("-1", now), None);
        assert_eq!(retry_after_value("NaN", now), None);
    }
}
