//! The command author and the API key in its environment. One test in its own binary: it
//! sets the key variables of this process, which no other test may race with.

use kestrel_desk::author::command::CommandAuthor;
use kestrel_desk::author::{Author, Completion, Prompt};
use std::time::Duration;

const KEY: &str = "sk-env-test-4d2c9e-SECRET";
const OTHER: &str = "sk-openai-test-77aa10-SECRET";

/// The child does not see KESTREL_API_KEY or OPENAI_API_KEY unless asked (`--pass-api-key`),
/// and a key it writes on stdout (its reply) or stderr is redacted before the message (and so the Bus) has it —
/// also when it is URL-encoded or inside longer text.
#[test]
fn the_command_author_gets_no_key_and_its_stderr_is_redacted() {
    // SAFETY: the only test in this binary; no other thread reads the environment yet.
    unsafe {
        std::env::set_var("KESTREL_API_KEY", KEY);
        std::env::set_var("OPENAI_API_KEY", OTHER);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let p = Prompt::default();
    let show = "printf 'STAND-DOWN k=[%s] o=[%s]\\n' \"${KESTREL_API_KEY:-none}\" \"${OPENAI_API_KEY:-none}\"";
    let mut a = CommandAuthor::new("sh", vec!["-c".into(), show.into()], Duration::from_secs(5));
    let out = rt.block_on(a.author(&p, None));
    assert_eq!(
        out,
        Completion::Reply("STAND-DOWN k=[none] o=[none]\n".into())
    );
    // Given the keys, a program that echoes them on stdout (its reply) does not put them on
    // the Bus or the screen: the reply and its streamed text are redacted too.
    a.pass_api_key = true;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let out = rt.block_on(a.author(&p, Some(tx)));
    assert_eq!(
        out,
        Completion::Reply("STAND-DOWN k=[[redacted]] o=[[redacted]]\n".into())
    );
    let mut streamed = String::new();
    while let Ok(d) = rx.try_recv() {
        streamed.push_str(&d);
    }
    assert!(!streamed.is_empty());
    for secret in [KEY, OTHER] {
        assert!(!streamed.contains(secret), "{secret} streamed: {streamed}");
    }

    let leak = "echo \"auth failed for x${KESTREL_API_KEY}y and ${OPENAI_API_KEY}\" >&2; echo \"url key=$(printf %s \"$KESTREL_API_KEY\" | sed 's/-/%2D/g')\" >&2; exit 4";
    let mut a = CommandAuthor::new("sh", vec!["-c".into(), leak.into()], Duration::from_secs(5));
    a.pass_api_key = true;
    let Completion::ProviderError(e) = rt.block_on(a.author(&p, None)) else {
        panic!("a failing command is a provider error");
    };
    let msg = e.to_string();
    assert!(msg.contains("auth failed for x[redacted]y"), "{msg}");
    for secret in [KEY, OTHER, "4d2c9e", "77aa10"] {
        assert!(!msg.contains(secret), "{secret} leaked: {msg}");
    }
}
