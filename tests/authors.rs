//! Authors against real processes and a real HTTP server on loopback.
//!
//! The server is a few lines of tokio on 127.0.0.1:0, speaking just enough HTTP/1.1 to
//! stream SSE the way OpenAI-compatible servers do; each test picks a behaviour (a normal
//! streamed turn, slow, HTTP 500, an empty completion, a stream cut mid-way) and every
//! request it receives is recorded for the request-shape assertions. Request loops are
//! bounded by the author's retry count; nothing leaves the machine.

use kestrel_desk::author::command::CommandAuthor;
use kestrel_desk::author::openai::{OpenAiAuthor, OpenAiConfig};
use kestrel_desk::author::secret::{self, ApiKey};
use kestrel_desk::author::{Author, Completion, CutKind, CutReason, Prompt, ProviderErrorKind};
use kestrel_desk::lang::grammar::{self, GrammarFormat, GrammarOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const KEY: &str = "sk-kestrel-test-7f3a9c-SECRET";

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Normal,
    Slow,
    Http500,
    Empty,
    Cut,
    /// Streamed text that ends with `finish_reason: "length"`.
    Length,
    /// Streamed text, then `[DONE]`, but no finish reason.
    DoneWithoutFinish,
    /// One JSON body (no SSE) with `finish_reason: "length"`.
    BodyLength,
    BodyContentFilter,
    /// One JSON body with `finish_reason: "stop"`.
    BodyStop,
    /// 429 with `Retry-After: 1` on the first request, then a normal stream.
    RetryAfter,
    /// 429 with `Retry-After: 3600`.
    RetryAfterTooLong,
    /// 429 with a `Retry-After` no `Duration` holds.
    RetryAfterHuge,
    /// One JSON body shaped like a completion with every field of the wrong type.
    BodyWrongTypes,
    /// A stream whose chunk's `delta.content` is a number.
    StreamWrongTypes,
    /// A stream whose delta holds bytes that are not UTF-8.
    BadUtf8,
    /// A stream of 2,000,000 bytes of text in 64 KiB deltas, then a finish.
    HugeStream,
    /// A stream whose one line never ends (9 MiB without a newline).
    EndlessLine,
    /// One JSON body (no SSE) of 9 MiB.
    HugeBody,
    /// `200` with one JSON body that is an error object, as some gateways answer.
    BodyError,
    /// A stream whose first event is an error object.
    StreamError,
    /// A normal stream, then a last chunk with no choices and the `usage`, then `[DONE]`.
    StreamUsage,
    /// One JSON body with `finish_reason: "stop"` and a `usage`.
    BodyUsage,
}

#[derive(Debug, Clone)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn serve(behaviour: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        // Bounded: the tests make at most a handful of requests.
        for _ in 0..16 {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move {
                let _ = handle(sock, behaviour, seen).await;
            });
        }
    });
    Server {
        base: format!("http://{addr}/v1"),
        seen,
    }
}

async fn handle(
    mut sock: TcpStream,
    behaviour: Behaviour,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let header_end = loop {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(serde_json::Value::Null);
    let auth = headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    seen.lock().expect("lock").push(Seen {
        request_line,
        headers,
        body,
    });
    let sse_head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    let delta = |s: &str| {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": s}, "finish_reason": null}]})
        )
    };
    let finish = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let plan = "PLAN cut budget 0.2R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n";
    let body = |finish: &str| {
        let b = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": plan}, "finish_reason": finish}]}).to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
            b.len()
        )
    };
    let requests = seen.lock().expect("lock").len();
    match behaviour {
        Behaviour::Length => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta(plan).as_bytes()).await?;
            sock.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n").await?;
        }
        Behaviour::DoneWithoutFinish => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta(plan).as_bytes()).await?;
            sock.write_all(b"data: [DONE]\n\n").await?;
        }
        Behaviour::BodyLength => sock.write_all(body("length").as_bytes()).await?,
        Behaviour::BodyContentFilter => sock.write_all(body("content_filter").as_bytes()).await?,
        Behaviour::BodyStop => sock.write_all(body("stop").as_bytes()).await?,
        Behaviour::BodyUsage => {
            let b = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": plan}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1001, "completion_tokens": 23, "total_tokens": 1024}}).to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(resp.as_bytes()).await?;
        }
        Behaviour::StreamUsage => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta("STAND-DOWN no edge").as_bytes())
                .await?;
            sock.write_all(
                b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            )
            .await?;
            sock.write_all(b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":987,\"completion_tokens\":5,\"total_tokens\":992}}\n\ndata: [DONE]\n\n").await?;
        }
        Behaviour::BodyError => {
            let b = r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(resp.as_bytes()).await?;
        }
        Behaviour::StreamError => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(
                b"data: {\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\"}}\n\n",
            )
            .await?;
        }
        Behaviour::RetryAfter if requests == 1 => {
            sock.write_all(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await?;
        }
        Behaviour::RetryAfterTooLong => {
            sock.write_all(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3600\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await?;
        }
        Behaviour::RetryAfterHuge => {
            sock.write_all(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 99999999999999999999999\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await?;
        }
        Behaviour::BodyWrongTypes => {
            let b = r#"{"choices":[{"index":"zero","message":{"content":5},"finish_reason":7}]}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(resp.as_bytes()).await?;
        }
        Behaviour::StreamWrongTypes => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":5}}]}\n\n")
                .await?;
            sock.write_all(b"data: [DONE]\n\n").await?;
        }
        Behaviour::BadUtf8 => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"STAND-DOWN \xff\xfe\"}}]}\n\n",
            )
            .await?;
            sock.write_all(finish.as_bytes()).await?;
        }
        Behaviour::Normal | Behaviour::RetryAfter => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(b": keep-alive\n\n").await?;
            for piece in ["STAND-DOWN", " chop,", " no", " edge"] {
                sock.write_all(delta(piece).as_bytes()).await?;
                sock.flush().await?;
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
            sock.write_all(finish.as_bytes()).await?;
        }
        Behaviour::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta("late").as_bytes()).await?;
            sock.write_all(finish.as_bytes()).await?;
        }
        Behaviour::Http500 => {
            // A careless server that echoes the Authorization header back.
            let body = format!("{{\"error\":\"upstream exploded; you sent {auth}\"}}");
            let resp = format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(resp.as_bytes()).await?;
        }
        Behaviour::Empty => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta("").as_bytes()).await?;
            sock.write_all(finish.as_bytes()).await?;
        }
        Behaviour::HugeStream => {
            sock.write_all(sse_head.as_bytes()).await?;
            let piece = "#".repeat(64 * 1000);
            for _ in 0..31 {
                sock.write_all(delta(&piece).as_bytes()).await?;
            }
            sock.write_all(delta(&"#".repeat(16_000)).as_bytes())
                .await?;
            sock.write_all(finish.as_bytes()).await?;
        }
        Behaviour::EndlessLine => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(b"data: ").await?;
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..(9 * 16) {
                if sock.write_all(&chunk).await.is_err() {
                    // The author stopped reading at its limit.
                    return Ok(());
                }
            }
        }
        Behaviour::HugeBody => {
            let len = 9 * 1024 * 1024;
            sock.write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n").as_bytes()).await?;
            let chunk = vec![b' '; 64 * 1024];
            for _ in 0..(len / chunk.len()) {
                if sock.write_all(&chunk).await.is_err() {
                    return Ok(());
                }
            }
        }
        Behaviour::Cut => {
            sock.write_all(sse_head.as_bytes()).await?;
            sock.write_all(delta("PLAN half budget 0.1R ttl +5m\n  WHEN spot").as_bytes())
                .await?;
            sock.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\" > h")
                .await?;
            sock.flush().await?;
            // Drop the connection mid-event: no finish, no [DONE].
        }
    }
    sock.shutdown().await?;
    Ok(())
}

fn prompt() -> Prompt {
    Prompt {
        profile: "authoring-v2: reply with a Kestrel document.".into(),
        card: "CARD: PLAN, WAKE, VIEW, STAND-DOWN.".into(),
        view: "VIEW probe\nspot 5201.25".into(),
        menu: "MENU: supersede, STAND-DOWN, pass".into(),
        repair: None,
        completion: false,
    }
}

fn config(base: &str) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(base, "tiny-test-model");
    c.api_key = Some(ApiKey::new(KEY));
    c.temperature = 0.5;
    c.max_tokens = 256;
    c.connect_timeout = Duration::from_secs(2);
    c.first_token_timeout = Duration::from_millis(400);
    c.total_timeout = Duration::from_secs(4);
    c.retries = 2;
    c.backoff = Duration::from_millis(20);
    c
}

fn assert_no_key(o: &Completion) {
    let dbg = format!("{o:?}");
    assert!(!dbg.contains(KEY), "the key leaked: {dbg}");
    if let Completion::ProviderError(e) = o {
        assert!(!e.to_string().contains(KEY), "the key leaked: {e}");
    }
}

fn provider_error(o: &Completion) -> ProviderErrorKind {
    match o {
        Completion::ProviderError(e) => e.kind,
        Completion::Reply(r) => panic!("expected a provider error, got a reply {r:?}"),
        Completion::CutOff(r) => panic!("expected a provider error, got a cut-off reply {r:?}"),
        Completion::Oversized { bytes, .. } => {
            panic!("expected a provider error, got an oversized reply of {bytes} bytes")
        }
    }
}

/// The cut-off text, or a panic naming what came instead.
fn cut_off(o: &Completion) -> &str {
    match o {
        Completion::CutOff(t) => t,
        other => panic!("expected a cut-off reply, got {other:?}"),
    }
}

/// Route a cut-off reply the way a session does (a model's turn at a mid wake).
fn routed(text: &str) -> kestrel_desk::turn::RoutedTurn {
    use kestrel_desk::turn::{self, AuthorKind, Profile, Reply, TurnContext, WakePhase};
    let ctx = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Model);
    turn::route(&Reply::CutOff(text.to_string()), &ctx)
}

#[tokio::test]
async fn a_normal_streamed_turn_and_the_request_shape() {
    let server = serve(Behaviour::Normal).await;
    let mut author = OpenAiAuthor::new(config(&server.base));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = author.author(&prompt(), Some(tx)).await;
    assert_eq!(out, Completion::Reply("STAND-DOWN chop, no edge".into()));
    let mut pieces = Vec::new();
    while let Ok(p) = rx.try_recv() {
        pieces.push(p);
    }
    assert_eq!(pieces, ["STAND-DOWN", " chop,", " no", " edge"]);
    let seen = server.seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.request_line, "POST /v1/chat/completions HTTP/1.1");
    let auth = req.headers.iter().find(|(k, _)| k == "authorization");
    assert_eq!(
        auth.map(|(_, v)| v.as_str()),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &req.body;
    assert_eq!(b["model"], "tiny-test-model");
    assert_eq!(b["stream"], true);
    assert_eq!(b["temperature"], 0.5);
    assert_eq!(b["max_tokens"], 256);
    assert_eq!(b["messages"][0]["role"], "system");
    let sys = b["messages"][0]["content"].as_str().expect("system text");
    assert!(sys.contains("authoring-v2") && sys.contains("CARD:"));
    assert_eq!(b["messages"][1]["role"], "user");
    let user = b["messages"][1]["content"].as_str().expect("user text");
    assert!(user.contains("VIEW probe") && user.contains("MENU:"));
    assert!(b.get("grammar").is_none(), "unconstrained sends no grammar");
    let info = author.info();
    assert!(!info.constrained);
    assert!(info.identity().contains("constrained=off"));
}

/// The temperature goes on the wire as given: `0.7`, not `0.699999988079071` (it was held as
/// an `f32` and widened), so a server's request log or cache key sees the value passed.
#[tokio::test]
async fn the_temperature_goes_on_the_wire_as_given() {
    for (t, text) in [(0.7, "0.7"), (0.1, "0.1"), (1.3, "1.3"), (0.0, "0.0")] {
        let server = serve(Behaviour::Normal).await;
        let mut c = config(&server.base);
        c.temperature = t;
        let out = OpenAiAuthor::new(c).author(&prompt(), None).await;
        assert!(matches!(out, Completion::Reply(_)), "{out:?}");
        let seen = server.seen.lock().expect("lock").clone();
        assert_eq!(seen[0].body["temperature"].to_string(), text);
    }
}

#[tokio::test]
async fn constrained_decoding_sends_the_exported_gbnf() {
    let server = serve(Behaviour::Normal).await;
    let mut cfg = config(&server.base);
    cfg.constrained = true;
    let mut author = OpenAiAuthor::new(cfg);
    let out = author.author(&prompt(), None).await;
    assert!(matches!(out, Completion::Reply(_)));
    let seen = server.seen.lock().expect("lock").clone();
    let want = grammar::export(GrammarFormat::Gbnf, GrammarOptions::default());
    assert_eq!(seen[0].body["grammar"].as_str(), Some(want.as_str()));
    assert!(author.info().identity().contains("constrained=on"));
}

#[tokio::test]
async fn a_slow_provider_times_out_into_a_provider_error() {
    let server = serve(Behaviour::Slow).await;
    let mut cfg = config(&server.base);
    cfg.retries = 1;
    let mut author = OpenAiAuthor::new(cfg);
    let t = std::time::Instant::now();
    let out = author.author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Timeout);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(server.seen.lock().expect("lock").len(), 2, "one retry");
    assert_no_key(&out);
}

/// A configured timeout past what the clock can hold is no deadline, never a panic
/// (`Instant + Duration` overflowed at `u64::MAX` seconds: "overflow when adding duration
/// to instant" in `call`; the CLI flags are bounded to a day as well).
#[tokio::test]
async fn a_timeout_past_the_clock_is_no_deadline_not_a_panic() {
    let server = serve(Behaviour::Normal).await;
    let mut cfg = config(&server.base);
    cfg.total_timeout = Duration::from_secs(u64::MAX);
    cfg.first_token_timeout = Duration::MAX;
    let out = OpenAiAuthor::new(cfg).author(&prompt(), None).await;
    assert_eq!(out, Completion::Reply("STAND-DOWN chop, no edge".into()));
    let server = serve(Behaviour::RetryAfter).await;
    let mut cfg = config(&server.base);
    cfg.total_timeout = Duration::from_secs(i64::MAX as u64);
    let out = OpenAiAuthor::new(cfg).author(&prompt(), None).await;
    assert!(matches!(out, Completion::Reply(_)), "{out:?}");
}

#[tokio::test]
async fn http_500_ends_in_a_provider_error_after_bounded_retries_without_the_key() {
    let server = serve(Behaviour::Http500).await;
    let mut author = OpenAiAuthor::new(config(&server.base));
    let out = author.author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Http);
    assert_eq!(server.seen.lock().expect("lock").len(), 3, "1 + 2 retries");
    let Completion::ProviderError(e) = &out else {
        unreachable!()
    };
    assert!(e.message.contains("500"), "{e}");
    assert!(
        e.message.contains("[redacted]"),
        "the echoed key is redacted: {e}"
    );
    assert_no_key(&out);
    assert!(!format!("{:?}", config(&server.base)).contains(KEY));
}

#[tokio::test]
async fn an_empty_completion_is_a_provider_error_not_a_pass() {
    let server = serve(Behaviour::Empty).await;
    let mut author = OpenAiAuthor::new(config(&server.base));
    let out = author.author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::EmptyCompletion);
    assert_no_key(&out);
}

/// A stream that ends (here: the connection closes mid-event) without a finish reason is a
/// cut-off reply (`CutReason::Broken`), never an authored partial reply. The session makes
/// it a `stream-cut` provider error, not a truncation at the budget (see
/// `a_cut_off_reply_says_why_and_only_a_provider_stop_is_truncated`); routed as a provider's
/// stop it would be truncated.
#[tokio::test]
async fn a_stream_cut_mid_way_is_cut_off_not_a_partial_reply() {
    let server = serve(Behaviour::Cut).await;
    let mut author = OpenAiAuthor::new(config(&server.base));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = author.author(&prompt(), Some(tx)).await;
    assert_eq!(cut_off(&out), "PLAN half budget 0.1R ttl +5m\n  WHEN spot");
    assert!(
        rx.try_recv().is_ok(),
        "the partial text was streamed for display"
    );
    assert_eq!(
        server.seen.lock().expect("lock").len(),
        1,
        "text arrived: not retried"
    );
    assert_eq!(routed(cut_off(&out)).outcome.name(), "truncated");
    assert_no_key(&out);
}

/// `finish_reason: "length"` (the output-token limit) is a cut-off reply even though the
/// streamed prefix is a whole, valid plan: routed, it is *truncated*, never armed.
#[tokio::test]
async fn a_streamed_reply_cut_at_the_token_limit_is_truncated_even_when_it_parses() {
    let server = serve(Behaviour::Length).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    let text = cut_off(&out);
    kestrel_desk::lang::check(text, kestrel_desk::lang::Mode::Turn).expect("the prefix parses");
    let t = routed(text);
    assert_eq!(t.outcome.name(), "truncated");
    assert!(t.kestrel.is_empty(), "nothing to arm: {t:?}");
    assert_eq!(t.outcome.errors()[0].rule, "truncated");
}

/// `[DONE]` with no finish reason before it: a cut-off reply (`CutReason::Unsaid`), which
/// routed as a provider's stop would be truncated; the session takes it as whole (see
/// `a_cut_off_reply_says_why_and_only_a_provider_stop_is_truncated`).
#[tokio::test]
async fn a_stream_that_ends_without_a_finish_reason_is_truncated() {
    let server = serve(Behaviour::DoneWithoutFinish).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert_eq!(routed(cut_off(&out)).outcome.name(), "truncated");
}

/// Each cut-off reply says why, and the session takes it by that (`Cut::reply_kind`): a
/// stream the connection cut mid-reply is a `stream-cut` provider error (before, it was
/// truncated "at the provider's output-token limit"), one that ended with `[DONE]` but no
/// finish reason is whole, and only a finish reason such as `length` is truncated.
#[tokio::test]
async fn a_cut_off_reply_says_why_and_only_a_provider_stop_is_truncated() {
    let server = serve(Behaviour::Cut).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    let Completion::CutOff(cut) = &out else {
        panic!("expected a cut-off reply, got {out:?}")
    };
    assert_eq!(cut.reason, CutReason::Broken);
    let CutKind::Failed(e) = cut.reply_kind() else {
        panic!("expected a provider error, got {:?}", cut.reply_kind())
    };
    assert_eq!(e.kind, ProviderErrorKind::StreamCut);
    assert!(
        e.to_string()
            .starts_with("provider-error kind=stream-cut the stream ended after 41 bytes"),
        "{e}"
    );
    assert!(!e.message.contains("output-token limit"), "{e}");
    let server = serve(Behaviour::DoneWithoutFinish).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    let Completion::CutOff(cut) = &out else {
        panic!("expected a cut-off reply, got {out:?}")
    };
    assert_eq!(cut.reason, CutReason::Unsaid);
    assert_eq!(cut.reply_kind(), CutKind::Whole);
    for b in [Behaviour::Length, Behaviour::BodyLength] {
        let server = serve(b).await;
        let out = OpenAiAuthor::new(config(&server.base))
            .author(&prompt(), None)
            .await;
        let Completion::CutOff(cut) = &out else {
            panic!("expected a cut-off reply, got {out:?}")
        };
        assert_eq!(cut.reason, CutReason::Stopped("length".into()));
        assert_eq!(cut.reply_kind(), CutKind::Truncated);
    }
}

/// A reply the provider's content filter stopped fails closed as truncated, and the author is
/// told so: it was told the reply hit the output-token limit and to write a shorter turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filter_stop_is_truncated_and_says_so() {
    let server = serve(Behaviour::BodyContentFilter).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    let Completion::CutOff(cut) = &out else {
        panic!("expected a stopped reply, got {out:?}")
    };
    assert_eq!(cut.reason, CutReason::Stopped("content_filter".into()));
    // Through a headless session, as the repair loop and the Bus see it.
    let dir = scratch("content-filter");
    let bus = dir.join("s.bus.jsonl");
    let (base, b) = (server.base.clone(), bus.clone());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"))
            .args(["agent", "--tape"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tapes/trend-2025-04-09-s1.jsonl"
            ))
            .args(["--author", &base, "--bus"])
            .arg(&b)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("kestrel agent")
    })
    .await
    .expect("joined");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&bus).expect("the Bus");
    assert!(
        text.contains("the provider's content filter stopped the reply"),
        "{}",
        text.lines()
            .filter(|l| l.contains("\"repair\""))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!text.contains("output-token limit"));
}

/// The non-streamed path (a server that ignores `stream: true`) reads the finish reason too.
#[tokio::test]
async fn a_non_streamed_reply_cut_at_the_token_limit_is_truncated() {
    let server = serve(Behaviour::BodyLength).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert_eq!(routed(cut_off(&out)).outcome.name(), "truncated");
    let server = serve(Behaviour::BodyStop).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert!(
        matches!(&out, Completion::Reply(t) if t.starts_with("PLAN cut")),
        "{out:?}"
    );
}

/// A `200` whose body is an error object (`{"error":{"message":...}}`) is the server's
/// stated reason, reported as the same error in a stream is: `bad-response the server
/// reported an error: ...` with its message. It read `empty-completion the completion was
/// empty`, which sent the evaluator to the model, not the gateway.
#[tokio::test]
async fn a_200_error_body_is_the_servers_error_as_in_a_stream() {
    let mut said = Vec::new();
    for b in [Behaviour::BodyError, Behaviour::StreamError] {
        let server = serve(b).await;
        let out = OpenAiAuthor::new(config(&server.base))
            .author(&prompt(), None)
            .await;
        assert_eq!(
            provider_error(&out),
            ProviderErrorKind::BadResponse,
            "{out:?}"
        );
        let Completion::ProviderError(e) = &out else {
            unreachable!()
        };
        assert!(
            e.message.starts_with("the server reported an error: ")
                && e.message.contains("The server is overloaded"),
            "{e}"
        );
        // Retried like any failure before text (1 + 2 retries).
        assert!(e.message.ends_with("(attempt 3)"), "{e}");
        said.push(e.to_string());
    }
    assert_eq!(said[0], said[1], "one message for a body and a stream");
}

/// The provider's `usage` (its own prompt and completion token counts) is kept for the
/// session to record, from a whole body or a stream's last chunk; a server that sends none
/// gives none. It was thrown away.
#[tokio::test]
async fn the_providers_usage_is_read_from_a_body_or_the_streams_last_chunk() {
    use kestrel_desk::author::Usage;
    for (b, want) in [
        (
            Behaviour::BodyUsage,
            Some(Usage {
                prompt_tokens: 1001,
                completion_tokens: 23,
            }),
        ),
        (
            Behaviour::StreamUsage,
            Some(Usage {
                prompt_tokens: 987,
                completion_tokens: 5,
            }),
        ),
        (Behaviour::Normal, None),
    ] {
        let server = serve(b).await;
        let mut author = OpenAiAuthor::new(config(&server.base));
        let out = author.author(&prompt(), None).await;
        assert!(matches!(out, Completion::Reply(_)), "{out:?}");
        assert_eq!(author.take_usage(), want);
        // Taking it clears it.
        assert_eq!(author.take_usage(), None);
    }
}

/// A 429 with `Retry-After: 1` is retried after that second (not the 20 ms backoff); one
/// asking for an hour is beyond the bound and ends the call at once.
#[tokio::test]
async fn retry_after_is_honoured_and_bounded() {
    let server = serve(Behaviour::RetryAfter).await;
    let t = std::time::Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), Some(tx))
        .await;
    assert_eq!(out, Completion::Reply("STAND-DOWN chop, no edge".into()));
    // The retry starts a new reply on the stream (the desk shows that one alone).
    let mut pieces = Vec::new();
    while let Ok(p) = rx.try_recv() {
        pieces.push(p);
    }
    assert_eq!(
        pieces.first().map(String::as_str),
        Some(kestrel_desk::author::NEW_ATTEMPT)
    );
    assert_eq!(pieces[1..].concat(), "STAND-DOWN chop, no edge");
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "waited {:?}",
        t.elapsed()
    );
    assert_eq!(server.seen.lock().expect("lock").len(), 2);
    let server = serve(Behaviour::RetryAfterTooLong).await;
    let t = std::time::Instant::now();
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Http);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(server.seen.lock().expect("lock").len(), 1, "not retried");
    let Completion::ProviderError(e) = &out else {
        unreachable!()
    };
    assert!(e.message.contains("retry after"), "{e}");
}

/// A `Retry-After` too large for a `Duration` is quoted as the server sent it, not as the
/// bound it was read as ("retry after 1000000s"), and the call ends at once.
#[tokio::test]
async fn a_huge_retry_after_is_quoted_as_sent() {
    let server = serve(Behaviour::RetryAfterHuge).await;
    let t = std::time::Instant::now();
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Http);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(server.seen.lock().expect("lock").len(), 1, "not retried");
    let Completion::ProviderError(e) = &out else {
        unreachable!()
    };
    assert!(
        e.message.contains(
            "the server asked to retry after `Retry-After: 99999999999999999999999`, more than the 30s kestrel waits: not retried"
        ),
        "{e}"
    );
    assert!(!e.message.contains("1000000s"), "{e}");
}

/// A body or a stream chunk shaped like a completion but with fields of the wrong type is
/// a bad response (not a chat completion), not "the completion was empty" retried 3 times.
#[tokio::test]
async fn a_wrongly_typed_completion_is_a_bad_response_not_empty() {
    for (b, why) in [
        (
            Behaviour::BodyWrongTypes,
            "`choices[0].finish_reason` is a number, not text",
        ),
        (
            Behaviour::StreamWrongTypes,
            "`choices[0].delta.content` is a number, not text",
        ),
    ] {
        let server = serve(b).await;
        let out = OpenAiAuthor::new(config(&server.base))
            .author(&prompt(), None)
            .await;
        assert_eq!(provider_error(&out), ProviderErrorKind::BadResponse);
        let Completion::ProviderError(e) = &out else {
            unreachable!()
        };
        assert!(e.message.contains(why), "{e}");
        assert_eq!(server.seen.lock().expect("lock").len(), 1, "not retried");
    }
}

/// Bytes that are not UTF-8 are a bad response, never decoded lossily into a reply.
#[tokio::test]
async fn invalid_utf8_from_the_server_is_a_provider_error() {
    let server = serve(Behaviour::BadUtf8).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    assert_eq!(provider_error(&out), ProviderErrorKind::BadResponse);
}

/// A reply past the reply limit is kept up to it and counted: the author gives its first
/// 4 KiB and its whole size (the router refuses it by size, as before), not 2 MB of text.
/// A stream line that never ends and a body past 8 MiB are bad responses, read no further.
#[tokio::test]
async fn a_huge_reply_is_counted_not_kept_and_a_huge_line_or_body_is_refused() {
    let server = serve(Behaviour::HugeStream).await;
    let out = OpenAiAuthor::new(config(&server.base))
        .author(&prompt(), None)
        .await;
    match out {
        Completion::Oversized { head, bytes } => {
            assert_eq!(bytes, 2_000_000);
            assert_eq!(head, "#".repeat(kestrel_desk::limits::KEPT_REPLY_BYTES));
        }
        o => panic!("{o:?}"),
    }
    for (b, said) in [
        (
            Behaviour::EndlessLine,
            "a stream line or event is over 8 MiB",
        ),
        (Behaviour::HugeBody, "the response body is over 8 MiB"),
    ] {
        let server = serve(b).await;
        let out = OpenAiAuthor::new(config(&server.base))
            .author(&prompt(), None)
            .await;
        assert_eq!(provider_error(&out), ProviderErrorKind::BadResponse);
        let Completion::ProviderError(e) = &out else {
            unreachable!()
        };
        assert!(e.message.contains(said), "{}", e.message);
    }
}

/// A command that writes 3 MB is read to its end and counted, but kept only to the limit.
#[tokio::test]
async fn a_commands_huge_reply_is_counted_not_kept() {
    let out = sh(
        "cat >/dev/null; head -c 3000000 /dev/zero | tr '\\0' '#'",
        10_000,
    )
    .author(&prompt(), None)
    .await;
    match out {
        Completion::Oversized { head, bytes } => {
            assert_eq!(bytes, 3_000_000);
            assert_eq!(head, "#".repeat(kestrel_desk::limits::KEPT_REPLY_BYTES));
        }
        o => panic!("{o:?}"),
    }
}

/// The whole process: `kestrel agent` with a command that writes 150 MB took 330 MB of
/// memory to refuse it (the reply was read whole, then refused by size). Its peak is now
/// tens of MB, and the Bus says the same as before (the reply's size, its first 4 KiB, an
/// estimate of its tokens).
#[cfg(target_os = "linux")]
#[test]
fn a_runaway_command_does_not_take_the_memory() {
    let dir = scratch("runaway");
    let bus = dir.join("s.bus.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["agent", "--tape"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tapes/shock-2025-04-09-s7.jsonl"
        ))
        .args([
            "--author",
            "cmd:cat >/dev/null; head -c 150000000 /dev/zero | tr '\\0' '#'",
            "--bus",
        ])
        .arg(&bus)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kestrel agent");
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    let code = loop {
        // VmHWM is the process's peak resident memory so far.
        if let Some(kb) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(code.success(), "{code:?}");
    assert!(peak_kb > 0, "the peak was read");
    assert!(peak_kb < 100_000, "peak {peak_kb} kB");
    let text = std::fs::read_to_string(&bus).expect("the Bus");
    assert!(
        text.contains("the reply is 150000000 bytes"),
        "the size is said"
    );
    assert!(
        text.contains("\"tokens\":37500000"),
        "and its tokens estimated"
    );
}

/// A base URL with a query string keeps it after the endpoint path, and neither the query
/// nor the URL's userinfo appear in an error message (which the Bus carries).
#[tokio::test]
async fn the_url_query_stays_after_the_path_and_no_secret_reaches_a_message() {
    let server = serve(Behaviour::Normal).await;
    let base = format!("{}?api_key=QUERYSECRET123", server.base);
    let out = OpenAiAuthor::new(config(&base))
        .author(&prompt(), None)
        .await;
    assert!(matches!(out, Completion::Reply(_)), "{out:?}");
    let seen = server.seen.lock().expect("lock").clone();
    assert_eq!(
        seen[0].request_line,
        "POST /v1/chat/completions?api_key=QUERYSECRET123 HTTP/1.1"
    );
    // Nothing listens here: the connect error names the URL, without its secrets.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let mut cfg = config(&format!(
        "http://user:USERINFOSECRET@{addr}/v1?api_key=QUERYSECRET123"
    ));
    cfg.retries = 0;
    let out = OpenAiAuthor::new(cfg).author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Connect);
    let msg = format!("{out:?}");
    for secret in ["USERINFOSECRET", "QUERYSECRET123", "user:"] {
        assert!(!msg.contains(secret), "{secret} leaked: {msg}");
    }
    assert!(
        msg.contains(&format!("http://{addr}/v1/chat/completions")),
        "{msg}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let mut cfg = config(&format!("http://{addr}/v1"));
    cfg.retries = 1;
    let out = OpenAiAuthor::new(cfg).author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Connect);
    assert_no_key(&out);
}

// ---------------------------------------------------------------- command author

fn sh(script: &str, timeout_ms: u64) -> CommandAuthor {
    CommandAuthor::new(
        "sh",
        vec!["-c".into(), script.into()],
        Duration::from_millis(timeout_ms),
    )
}

#[tokio::test]
async fn a_command_reads_the_prompt_and_writes_the_reply() {
    let out = sh("cat", 5000).author(&prompt(), None).await;
    assert_eq!(out, Completion::Reply(prompt().full_text()));
    let out = sh("cat >/dev/null; printf 'STAND-DOWN quiet tape\\n'", 5000)
        .author(&prompt(), None)
        .await;
    assert_eq!(out, Completion::Reply("STAND-DOWN quiet tape\n".into()));
}

#[tokio::test]
async fn a_command_that_hangs_times_out() {
    let t = std::time::Instant::now();
    let out = sh("sleep 5", 300).author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Timeout);
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_command_that_fails_or_says_nothing_is_a_provider_error() {
    let out = sh("echo boom >&2; exit 3", 5000)
        .author(&prompt(), None)
        .await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Exit);
    let Completion::ProviderError(e) = out else {
        unreachable!()
    };
    assert!(e.message.contains("boom"), "{e}");
    // Silent on stderr: said so, no dangling `: ` at the end.
    let out = sh("cat >/dev/null; exit 3", 5000)
        .author(&prompt(), None)
        .await;
    let Completion::ProviderError(e) = out else {
        panic!("{out:?}")
    };
    assert!(
        e.message.ends_with("exit status: 3 (nothing on stderr)"),
        "{}",
        e.message
    );
    let out = sh("true", 5000).author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::EmptyCompletion);
    let out = CommandAuthor::new("/nonexistent/kestrel-brain", vec![], Duration::from_secs(1))
        .author(&prompt(), None)
        .await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Spawn);
}

/// Is `pid` gone (or a zombie awaiting its reaper)?
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Wait up to 2 s for `pid` to be gone.
fn wait_gone(pid: u32) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(2) {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-authors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// 256 KiB on stderr before the reply: with stderr read only after stdout closed, the
/// program blocked on a full pipe until the timeout.
#[tokio::test]
async fn a_command_flooding_stderr_does_not_deadlock() {
    let t = std::time::Instant::now();
    let out = sh(
        "cat >/dev/null; head -c 262144 /dev/zero | tr '\\0' x >&2; printf 'STAND-DOWN loud\\n'",
        10_000,
    )
    .author(&prompt(), None)
    .await;
    assert_eq!(out, Completion::Reply("STAND-DOWN loud\n".into()));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// On a timeout the whole process group dies: the `sleep` that `sh` started too.
#[tokio::test]
async fn a_timed_out_command_kills_its_whole_process_group() {
    let d = scratch("pgroup");
    let pidfile = d.join("pid");
    let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let out = sh(&script, 500).author(&prompt(), None).await;
    assert_eq!(provider_error(&out), ProviderErrorKind::Timeout);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the script wrote its child's pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(wait_gone(pid), "the grandchild {pid} outlived the timeout");
    let _ = std::fs::remove_dir_all(&d);
}

/// A program that exits after writing its reply but leaves a child holding stdout open: the
/// author answers at once (bounded grace) instead of waiting out the timeout, and the child
/// is killed with the group.
#[tokio::test]
async fn a_child_holding_stdout_open_does_not_hold_the_author() {
    let d = scratch("held");
    let pidfile = d.join("pid");
    let script = format!(
        "cat >/dev/null; printf 'STAND-DOWN done\\n'; sleep 30 & echo $! > {}",
        pidfile.display()
    );
    let t = std::time::Instant::now();
    let out = sh(&script, 20_000).author(&prompt(), None).await;
    assert_eq!(out, Completion::Reply("STAND-DOWN done\n".into()));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(wait_gone(pid), "the child {pid} holding stdout lives on");
    let _ = std::fs::remove_dir_all(&d);
}

/// The key is redacted wherever it appears: inside longer text, percent-encoded (either
/// case), JSON-escaped, base64, and as a prefix cut off by an excerpt or the end of text.
#[test]
fn redaction_covers_encoded_and_cut_off_forms_of_the_key() {
    let raw = "sk-te/st+key=\"9 QX7";
    let key = ApiKey::new(raw);
    let cases = [
        format!("before{raw}after"),
        "url?k=sk-te%2Fst%2Bkey%3D%229%20QX7&x=1".to_string(),
        "url?k=sk-te%2fst%2bkey%3d%229%20QX7".to_string(),
        "form k=sk-te%2Fst%2Bkey%3D%229+QX7".to_string(),
        format!("json {}", serde_json::to_string(raw).expect("json")),
        "b64 c2stdGUvc3Qra2V5PSI5IFFYNw==".to_string(),
        "cut sk-te/st+k…".to_string(),
        "ends sk-te/st+ke".to_string(),
    ];
    for c in &cases {
        let r = key.redact(c);
        assert!(r.contains("[redacted]"), "{c:?} -> {r:?}");
        for frag in ["sk-te/st", "sk-te%2", "c2stdGUv", "9 QX7", "9+QX7"] {
            assert!(!r.contains(frag), "{frag} left in {r:?} (from {c:?})");
        }
    }
    // Short prefixes and unrelated text are left alone.
    assert_eq!(key.redact("a sk- b"), "a sk- b");
    assert_eq!(key.redact("nothing here"), "nothing here");
}

// ---------------------------------------------------------------- recorded and human

// ---------------------------------------------------------------- secrets

#[test]
fn the_key_is_redacted_and_stored_owner_only() {
    let key = ApiKey::new(format!("  {KEY}\n"));
    assert_eq!(key.expose_secret(), KEY);
    assert_eq!(format!("{key}"), "[redacted]");
    assert_eq!(format!("{key:?}"), "[redacted]");
    let dir = std::env::temp_dir().join(format!("kestrel-secret-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = secret::store_api_key(&key, Some(&dir)).expect("store");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let none = |_: &str| None;
    let loaded = secret::load_api_key_with(none, None, Some(&dir)).expect("load");
    assert_eq!(loaded, Some(key.clone()));
    // The environment wins: the configured name, then OPENAI_API_KEY.
    let env = |k: &str| (k == "MY_KEY").then(|| "from-env".to_string());
    let k = secret::load_api_key_with(env, Some("MY_KEY"), Some(&dir)).expect("env");
    assert_eq!(
        k.map(|k| k.expose_secret().to_string()),
        Some("from-env".into())
    );
    let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "fallback".to_string());
    let k = secret::load_api_key_with(env, None, Some(&dir)).expect("env");
    assert_eq!(
        k.map(|k| k.expose_secret().to_string()),
        Some("fallback".into())
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = secret::load_api_key_with(none, None, Some(&dir)).expect_err("too open");
        assert!(e.contains("chmod 600") && !e.contains(KEY), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_example_command_author_writes_valid_turns() {
    let script = format!("{}/examples/command-author.sh", env!("CARGO_MANIFEST_DIR"));
    // At the open it arms a WAKE on each headline (`within`: a bare `headline` is latched,
    // so its WAKE would rise once a day); later it passes, and says whether the View's
    // headlines pane holds one (the card names `headline` whatever the View holds).
    for (view, wakes, journal) in [
        (
            "FRAME tape=t t=09:30:00 view=default woke=open why=the session opened\n[headlines]\nnone\n",
            true,
            "waking at each headline",
        ),
        (
            "FRAME tape=t t=10:15:07 view=default woke=next-headline why=headline within 1s\n[headlines]\n10:15 CPI hot\n",
            false,
            "a headline crossed",
        ),
        (
            "FRAME tape=t t=11:00:00 view=default woke=plan-x why=x\n[headlines]\nnone\n",
            false,
            "nothing in the View",
        ),
    ] {
        let p = Prompt {
            card: "CARD: WAKE <name> WHEN <trigger>; headline [within <dur>]".into(),
            view: view.into(),
            ..prompt()
        };
        let mut a = CommandAuthor::new("sh", vec![script.clone()], Duration::from_secs(5));
        let Completion::Reply(text) = a.author(&p, None).await else {
            panic!("the example author failed");
        };
        kestrel_desk::lang::check(&text, kestrel_desk::lang::Mode::Turn).expect("a valid turn");
        assert_eq!(
            text.contains("WAKE next-headline WHEN headline within 1s"),
            wakes,
            "{view:?} -> {text}"
        );
        assert!(
            text.starts_with(&format!("# {journal}")),
            "{view:?} -> {text}"
        );
    }
}

/// The desk seats a live model author: the OPEN wake's View goes to the server, the reply
/// streams into the desk as it is written (the tape is not waited for), and in co-pilot the
/// routed turn waits for the person, then acts where it is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_streams_a_live_model_author_and_holds_its_turn_in_copilot() {
    use kestrel_desk::desk;
    use kestrel_desk::session::{Command, agent::Agent as DeskAgent};
    let server = serve(Behaviour::Normal).await;
    let spec = kestrel_desk::session::AuthorFlags {
        model: "test-model".into(),
        temperature: 0.0,
        timeout: 10,
        ..Default::default()
    }
    .spec(&server.base);
    let src = desk::tape_source(None).expect("bundled tape");
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), true).expect("desk");
    // A live author thinks in wall time: the desk seats it at 1x, not 60x.
    assert_eq!(app.snap.speed, kestrel_desk::session::Speed::X1);
    assert_eq!(
        app.agent()
            .and_then(|a| a.waiting.as_ref())
            .map(|w| w.0.as_str()),
        Some("open")
    );
    // The tape moves while the model writes.
    app.send(Command::Seek(kestrel_desk::market::Ts::hms(9, 33, 0, 0)));
    let start = std::time::Instant::now();
    while app.proposal().is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "no answer");
        tokio::time::sleep(Duration::from_millis(20)).await;
        app.tick();
    }
    assert_eq!(
        app.agent().map(|a| a.thinking.as_str()),
        Some("STAND-DOWN chop, no edge"),
        "streamed as written"
    );
    let p = app.proposal().expect("proposal");
    assert_eq!(p.run.turn.outcome.name(), "stand-down");
    let seen = server.seen.lock().expect("lock").clone();
    let body = seen[0].body.to_string();
    assert!(
        body.contains("FRAME tape=trend-2025-04-09-s1"),
        "the View is in the prompt"
    );
    assert_eq!(seen[0].body["stream"], true);
    assert!(!app.snap.bus.iter().any(|l| l.contains("\"type\":\"turn\"")));
    let call = p.call;
    app.send(Command::Accept { call });
    let turn = app
        .snap
        .bus
        .iter()
        .find(|l| l.contains("\"type\":\"turn\""))
        .expect("the accepted turn is on the Bus");
    assert!(
        turn.contains("\"ts\":\"09:33:00.000\"") && turn.contains("stand-down"),
        "{turn}"
    );
}

/// `kestrel agent`'s text report says what the run cost: the replies, the re-asks among
/// them, the tokens written and the provider's `usage`. Before 2026-12-06 a turn refused
/// three times read `invalid 0 … fail-closed pass 1 | repaired 0`, and the tokens and usage
/// were in `--json` only. The text's figures are the `--json` spend's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_report_has_a_spend_line() {
    let agent = |base: String, json: bool| {
        tokio::task::spawn_blocking(move || {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"));
            c.args(["agent", "--tape"])
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tapes/trend-2025-04-09-s1.jsonl"
                ))
                .args(["--author", &base])
                .stdin(std::process::Stdio::null());
            if json {
                c.arg("--json");
            }
            let out = c.output().expect("kestrel agent");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    // Every reply cut at the token limit: the first ask and two re-asks, no usage.
    let cut = serve(Behaviour::Length).await;
    let text = agent(cut.base.clone(), false).await.expect("joined");
    let v: serde_json::Value =
        serde_json::from_str(&agent(cut.base.clone(), true).await.expect("joined")).expect("json");
    let spend = text.lines().last().unwrap_or_default();
    assert_eq!(
        spend,
        format!(
            "spend: 3 replies, 2 re-asks | written {} tokens (cl100k) | no provider usage reported",
            v["spend"]["tokens"]
        ),
        "{text}"
    );
    assert_eq!(v["outcomes"]["reasks"], 2);
    // One reply with the provider's usage.
    let usage = serve(Behaviour::StreamUsage).await;
    let text = agent(usage.base.clone(), false).await.expect("joined");
    assert!(
        text.lines()
            .last()
            .unwrap_or_default()
            .ends_with("| provider usage 987 prompt + 5 completion tokens over 1 attempt")
            && text.contains("spend: 1 reply, 0 re-asks | written "),
        "{text}"
    );
}
