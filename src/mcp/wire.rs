//! The JSON-RPC front door of `kestrel mcp`: every line read on stdin is screened here before
//! rmcp sees it, so that every request the server reads gets exactly one answer.
//!
//! rmcp drops input it cannot parse (not JSON, a lone surrogate, nesting past serde_json's
//! 128 levels), answers some shapes with an id-less error, reads `tools/call` with bad
//! params as an unknown method, and stops serving when a request comes before `initialize`.
//! [`Screen::screen`] decides for each line, cheaply and without recursion on the input
//! (fields are read with `IgnoredAny`, which serde_json skips iteratively):
//!
//! | The line | The answer |
//! |---|---|
//! | blank | nothing |
//! | longer than [`MAX_LINE_BYTES`] | `-32600`, id `null` (the line is skipped unread) |
//! | not UTF-8, not JSON, a lone surrogate in `id`/`method` | `-32700` parse error, id `null` |
//! | a JSON array (a batch, even `[]`) | `-32600` "batches are not supported", id `null` |
//! | any other non-object | `-32600`, id `null` |
//! | `id` not a string or an integer in `i64` (`1.5`, `2^70`, `{"a":1}`, `null`, `true`) | `-32600`, id `null` |
//! | no `method`, with `result`/`error` (a response) | nothing (this server sends no requests) |
//! | no `method` otherwise, `method` not a string, `jsonrpc` not `"2.0"` | `-32600` with the id |
//! | `params` present and not an object (`[]`, `"x"`, `null`) | `-32602` with the id |
//! | `params` nested past 128 levels, or holding a lone surrogate | `-32602` with the id |
//! | `tools/call` without `params.name` (a string), or `arguments` not an object | `-32602` with the id |
//! | a request before `initialize` (other than `ping`) | `-32002` "not initialized", with the id |
//! | rmcp cannot read it: a known method | `-32602` with the id; an unknown one `-32601` |
//! | a request whose id is still in flight (forwarded, not yet answered) | `-32600` "id already in use", with the id |
//! | `notifications/cancelled` with a `requestId` | forwarded; that request is owed no answer any more |
//! | otherwise | forwarded to rmcp, which answers it |
//!
//! A notification (no `id`) that fails a check is dropped: JSON-RPC never answers one. Batches
//! are refused rather than supported because MCP 2025-06-18 removed JSON-RPC batching and
//! rmcp does not read them.

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

/// The longest request line read (16 MiB); a longer one is answered `-32600` and skipped.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// JSON-RPC error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// A request before `initialize` (the server-error range JSON-RPC leaves to servers).
pub const NOT_INITIALIZED: i64 = -32002;

/// The MCP methods a client may send (a failure to read one of them is `-32602`).
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// One field's value, read without recursing into it: a scalar kept, an object or array
/// skipped.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool,
    Int(i64),
    /// A number that is not an integer in `i64` (a fraction, or too large).
    OtherNumber,
    Str(String),
    Object,
    Array,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool)
            }
            fn visit_i64<E>(self, n: i64) -> Result<Scalar, E> {
                Ok(Scalar::Int(n))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Scalar, E> {
                Ok(i64::try_from(n).map_or(Scalar::OtherNumber, Scalar::Int))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
                Ok(Scalar::OtherNumber)
            }
            fn visit_str<E>(self, s: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Scalar, E> {
                Ok(Scalar::Str(s))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Scalar, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Scalar, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Array)
            }
        }
        d.deserialize_any(V)
    }
}

/// A present field, `null` included (absent stays `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scalar>, D::Error> {
    Scalar::deserialize(d).map(Some)
}

/// The envelope of a message; `params`, `result` and `error` are only typed, never read.
#[derive(Debug, Deserialize)]
struct Head {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Scalar>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Scalar>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Scalar>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Scalar>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Scalar>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Scalar>,
}

/// What to do with one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screened {
    /// Hand it to rmcp; a request carries its id's key ([`id_key`]), owed one response.
    Forward(Option<String>),
    /// Hand it to rmcp: a `notifications/cancelled` for the request with this id key, which
    /// is owed no response any more (MCP: a cancelled request is not answered; rmcp sends
    /// none).
    Cancel(String),
    /// Answer it with this JSON-RPC error line (not forwarded).
    Answer(String),
    /// Nothing to do: a blank line, a response, or a notification that fails a check.
    Ignore,
}

/// serde_json's error in a client's words. A `\uD800`-`\uDFFF` escape without its other
/// half (a lone UTF-16 surrogate) is not text, and serde_json calls it "unexpected end of
/// hex escape" or "lone leading surrogate in hex escape" (its only two messages for one,
/// and used for nothing else), which reads as an escape cut short; the position is kept.
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let lone = [
        "unexpected end of hex escape",
        "lone leading surrogate in hex escape",
    ];
    match lone.iter().find_map(|m| text.strip_prefix(m)) {
        Some(at) => format!(
            "a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its other half) is not text{at}"
        ),
        None => text,
    }
}

/// A JSON-RPC error response line.
pub fn error_line(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The key a request id is tracked by: its JSON text (`7`, `"a"`).
fn key_of(id: &Scalar) -> Option<(String, Value)> {
    match id {
        Scalar::Int(n) => Some((n.to_string(), json!(n))),
        Scalar::Str(s) => Some((Value::String(s.clone()).to_string(), json!(s))),
        _ => None,
    }
}

/// The id key of a message the server writes, if it is a response (an id, no method).
pub fn response_key(line: &str) -> Option<String> {
    let h: Head = serde_json::from_str(line).ok()?;
    if h.method.is_some() {
        return None;
    }
    key_of(h.id.as_ref()?).map(|(k, _)| k)
}

/// The id key of a request line as JSON (`7`, `"a"`), for answering it after the fact.
pub fn id_of_key(key: &str) -> Value {
    serde_json::from_str(key).unwrap_or(Value::Null)
}

/// The screen: remembers whether `initialize` went through.
#[derive(Debug, Default)]
pub struct Screen {
    initialized: bool,
}

impl Screen {
    /// Decide what to do with one line (without its final newline), with no request in
    /// flight.
    pub fn screen(&mut self, line: &[u8]) -> Screened {
        self.screen_in_flight(line, &|_| false)
    }

    /// Decide what to do with one line (without its final newline). `in_flight` tells
    /// whether a request with this id key ([`response_key`]) was forwarded and is not
    /// answered yet: a request reusing it is refused `-32600` (JSON-RPC: an id identifies
    /// one request; rmcp answered only one of two, and the other waited for the drain).
    pub fn screen_in_flight(&mut self, line: &[u8], in_flight: &dyn Fn(&str) -> bool) -> Screened {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let null = Value::Null;
        let Ok(text) = std::str::from_utf8(line) else {
            return Screened::Answer(error_line(&null, PARSE_ERROR, "parse error: not UTF-8"));
        };
        let text = text.trim();
        if text.is_empty() {
            return Screened::Ignore;
        }
        if text.starts_with('[') {
            return Screened::Answer(error_line(
                &null,
                INVALID_REQUEST,
                "invalid request: JSON-RPC batches are not supported (MCP 2025-06-18); send one request per line",
            ));
        }
        if !text.starts_with('{') {
            // The message says what the code says: JSON that is not an object is an invalid
            // request; a line that is not JSON at all is a parse error.
            let (code, message) = if serde_json::from_str::<IgnoredAny>(text).is_ok() {
                (
                    INVALID_REQUEST,
                    "invalid request: a request is one JSON object, not another JSON value",
                )
            } else {
                (
                    PARSE_ERROR,
                    "parse error: the line is not JSON (a request is one JSON object)",
                )
            };
            return Screened::Answer(error_line(&null, code, message));
        }
        let head: Head = match serde_json::from_str(text) {
            Ok(h) => h,
            Err(e) => {
                let (code, what) = match e.classify() {
                    serde_json::error::Category::Data => (INVALID_REQUEST, "invalid request"),
                    _ => (PARSE_ERROR, "parse error"),
                };
                return Screened::Answer(error_line(
                    &null,
                    code,
                    &format!("{what}: {}", json_error(&e)),
                ));
            }
        };
        let notification = head.id.is_none();
        let (key, id) = match &head.id {
            None => (None, Value::Null),
            Some(i) => match key_of(i) {
                Some((k, v)) => (Some(k), v),
                None => {
                    return Screened::Answer(error_line(
                        &null,
                        INVALID_REQUEST,
                        "invalid request: id must be a string or an integer (at most 2^63-1)",
                    ));
                }
            },
        };
        // Answer a failed check, unless the message is a notification.
        let answer = |code: i64, message: &str| {
            if notification {
                Screened::Ignore
            } else {
                Screened::Answer(error_line(&id, code, message))
            }
        };
        let method = match &head.method {
            Some(Scalar::Str(m)) => m.clone(),
            None if head.result.is_some() || head.error.is_some() => return Screened::Ignore,
            None => return answer(INVALID_REQUEST, "invalid request: no method"),
            Some(_) => return answer(INVALID_REQUEST, "invalid request: method must be a string"),
        };
        if head.jsonrpc != Some(Scalar::Str("2.0".into())) {
            return answer(INVALID_REQUEST, "invalid request: jsonrpc must be \"2.0\"");
        }
        if !matches!(head.params, None | Some(Scalar::Object)) {
            return answer(
                INVALID_PARAMS,
                &format!("invalid params: {method} takes its params as one JSON object"),
            );
        }
        // The whole message as a value: bounded depth (serde_json's 128) and valid strings.
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return answer(
                    INVALID_PARAMS,
                    &format!("invalid params: {}", json_error(&e)),
                );
            }
        };
        if method == "tools/call" {
            let p = &v["params"];
            if !p["name"].is_string() {
                return answer(
                    INVALID_PARAMS,
                    "invalid params: tools/call needs params.name, the tool's name as a string",
                );
            }
            if !(p["arguments"].is_null() || p["arguments"].is_object()) {
                return answer(
                    INVALID_PARAMS,
                    "invalid params: tools/call arguments must be a JSON object",
                );
            }
        }
        if !self.initialized && !notification && method != "initialize" && method != "ping" {
            return answer(
                NOT_INITIALIZED,
                "the server is not initialized: send initialize first",
            );
        }
        if !self.initialized && notification {
            // rmcp stops serving on anything but a request before initialize.
            return Screened::Ignore;
        }
        if method == "initialize" {
            // rmcp reads an `initialize` whose params are not InitializeRequestParams as a
            // custom request, and stops serving: it is refused here, and the server waits
            // for a good one.
            if let Err(e) =
                <rmcp::model::InitializeRequestParams as serde::Deserialize>::deserialize(
                    &v["params"],
                )
            {
                return answer(
                    INVALID_PARAMS,
                    &format!(
                        "invalid params for initialize: {e} (it needs protocolVersion, capabilities and clientInfo)"
                    ),
                );
            }
        }
        // A cancellation: the key of the request it names.
        let cancelled = if notification && method == "notifications/cancelled" {
            serde_json::from_value::<Scalar>(v["params"]["requestId"].clone())
                .ok()
                .as_ref()
                .and_then(key_of)
                .map(|(k, _)| k)
        } else {
            None
        };
        if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v) {
            let code = if KNOWN_METHODS.contains(&method.as_str()) {
                INVALID_PARAMS
            } else {
                METHOD_NOT_FOUND
            };
            let what = if code == INVALID_PARAMS {
                format!("invalid params for {method}: {e}")
            } else {
                format!("method not found: {method}")
            };
            return answer(code, &what);
        }
        if let Some(k) = &key
            && in_flight(k)
        {
            return answer(
                INVALID_REQUEST,
                &format!(
                    "invalid request: id already in use: a request with id {k} is still being answered; give each request its own id"
                ),
            );
        }
        if method == "initialize" {
            self.initialized = true;
        }
        if let Some(k) = cancelled {
            return Screened::Cancel(k);
        }
        Screened::Forward(key)
    }

    /// Whether an `initialize` went through to rmcp.
    pub fn initialized(&self) -> bool {
        self.initialized
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    fn ready() -> Screen {
        let mut s = Screen::default();
        assert_eq!(
            s.screen(INIT.as_bytes()),
            Screened::Forward(Some("1".into()))
        );
        s
    }

    fn answer(s: &mut Screen, line: &str) -> Value {
        match s.screen(line.as_bytes()) {
            Screened::Answer(a) => serde_json::from_str(&a).expect("an answer is JSON"),
            other => panic!("{line}: expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn malformed_requests_get_a_coded_answer() {
        let mut s = ready();
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"check","arguments":{{"d":{}{}}}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let cases: Vec<(String, i64, Value)> = vec![
            ("not json".into(), PARSE_ERROR, Value::Null),
            (r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}"#.into(), INVALID_PARAMS, json!(2)),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check","arguments":{"document":"\ud800"}}}"#.into(), INVALID_PARAMS, json!(3)),
            (deep, INVALID_PARAMS, json!(9)),
            (format!("[{INIT}]"), INVALID_REQUEST, Value::Null),
            ("[]".into(), INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.into(), INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}"#.into(), INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.into(), INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#.into(), INVALID_PARAMS, json!(4)),
            (r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#.into(), INVALID_PARAMS, json!(5)),
            (r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"check","arguments":"doc"}}"#.into(), INVALID_PARAMS, json!("s")),
            (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#.into(), INVALID_REQUEST, json!(7)),
            (r#"{"jsonrpc":"2.0","id":8}"#.into(), INVALID_REQUEST, json!(8)),
            ("42".into(), INVALID_REQUEST, Value::Null),
        ];
        for (line, code, id) in cases {
            let a = answer(&mut s, &line);
            let shown: String = line.chars().take(60).collect();
            assert_eq!(a["error"]["code"], code, "{shown}: {a}");
            assert_eq!(a["id"], id, "{shown}: {a}");
            assert_eq!(a["jsonrpc"], "2.0");
            // The message says what the code says.
            let want = match code {
                PARSE_ERROR => "parse error",
                INVALID_REQUEST => "invalid request",
                _ => "invalid params",
            };
            assert!(
                a["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(want)),
                "{shown}: {a}"
            );
        }
        // Well-formed calls still go through.
        assert_eq!(
            s.screen(br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"check","arguments":{"document":""}}}"#),
            Screened::Forward(Some("10".into()))
        );
        assert_eq!(
            s.screen(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Screened::Forward(None)
        );
        // An unknown method is rmcp's to answer (-32601).
        assert_eq!(
            s.screen(br#"{"jsonrpc":"2.0","id":6,"method":"no/such"}"#),
            Screened::Forward(Some("6".into()))
        );
    }

    #[test]
    fn notifications_and_responses_are_never_answered() {
        let mut s = ready();
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            "   ",
        ] {
            assert_eq!(s.screen(line.as_bytes()), Screened::Ignore, "{line}");
        }
    }

    #[test]
    fn requests_before_initialize_are_refused_not_fatal() {
        let mut s = Screen::default();
        let a = answer(&mut s, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(a["error"]["code"], NOT_INITIALIZED);
        assert_eq!(
            s.screen(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
            Screened::Forward(Some("2".into()))
        );
        // An initialize without its params is refused, not forwarded (rmcp stopped
        // serving on it); a good one then goes through.
        for bad in [
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        ] {
            let a = answer(&mut s, bad);
            assert_eq!(a["error"]["code"], INVALID_PARAMS, "{bad}: {a}");
            assert_eq!(a["id"], 5);
            assert!(!s.initialized(), "{bad}");
        }
        assert_eq!(
            s.screen(INIT.as_bytes()),
            Screened::Forward(Some("1".into()))
        );
        assert!(s.initialized());
    }

    #[test]
    fn a_request_reusing_an_id_in_flight_is_refused() {
        let mut s = ready();
        let busy = |k: &str| k == "\"dup\"" || k == "1";
        let line = br#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#;
        let a = match s.screen_in_flight(line, &busy) {
            Screened::Answer(a) => serde_json::from_str::<Value>(&a).expect("JSON"),
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(a["error"]["code"], INVALID_REQUEST, "{a}");
        assert_eq!(a["id"], "dup", "{a}");
        assert!(
            a["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("invalid request: id already in use")),
            "{a}"
        );
        // Once answered, the id may be used again; other ids go through meanwhile.
        assert_eq!(
            s.screen_in_flight(line, &|_| false),
            Screened::Forward(Some("\"dup\"".into()))
        );
        assert_eq!(
            s.screen_in_flight(br#"{"jsonrpc":"2.0","id":"other","method":"ping"}"#, &busy),
            Screened::Forward(Some("\"other\"".into()))
        );
        // A notification has no id to reuse.
        assert_eq!(
            s.screen_in_flight(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                &busy
            ),
            Screened::Forward(None)
        );
        // An initialize refused for its id does not count as initializing.
        let mut fresh = Screen::default();
        assert!(matches!(
            fresh.screen_in_flight(INIT.as_bytes(), &busy),
            Screened::Answer(_)
        ));
        assert!(!fresh.initialized());
    }

    #[test]
    fn a_cancellation_names_the_request_owed_no_answer() {
        let mut s = ready();
        for (line, want) in [
            (
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#,
                Screened::Cancel("9".into()),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"x"}}"#,
                Screened::Cancel("\"a\"".into()),
            ),
            // No request named: forwarded as any notification is.
            (
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}"#,
                Screened::Forward(None),
            ),
        ] {
            assert_eq!(s.screen(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn response_keys_match_request_keys() {
        assert_eq!(
            response_key(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            Some("7".into())
        );
        assert_eq!(
            response_key(r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":""}}"#),
            Some("\"a\"".into())
        );
        assert_eq!(response_key(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert_eq!(id_of_key("\"a\""), json!("a"));
    }
}
