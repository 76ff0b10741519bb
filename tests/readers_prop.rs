//! Property tests for every reader of a saved file: a Bus (`bus::parse_bus`, a recorded
//! author, an agent to grade, the errors report), a desk session file, a reply script, an
//! agent record. Whatever the bytes (arbitrary, or a real Bus cut and shuffled), each one
//! answers with a value or a coded error naming the line: it never panics.

use kestrel_desk::bus::{self, Bus};
use kestrel_desk::engine::EngineConfig;
use kestrel_desk::grade::AgentSession;
use kestrel_desk::market::{Px, open_tape};
use kestrel_desk::session::{self, Recorded, Run, RunConfig};
use kestrel_desk::session::{agent::Agent as DeskAgent, saved as desk_session};
use kestrel_desk::turn::report::{ErrorsReport, read_asks};
use kestrel_desk::turn::{AuthorKind, Profile};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A real Bus: the house agent answering its wakes on the bundled trend tape, with a reply
/// the router refuses once (so `repair` events are in it).
fn real_bus() -> &'static [u8] {
    static BUS: OnceLock<Vec<u8>> = OnceLock::new();
    BUS.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let tape = open_tape(&root.join("tapes/trend-2025-04-09-s1.jsonl")).expect("tape");
        let cfg = RunConfig {
            engine: EngineConfig::strict(Px::from_cents(100_000)),
            profile: Profile::AuthoringV2,
            author: AuthorKind::File,
            open_wake: true,
            view_request_cap: None,
        };
        let mut replies = vec!["PLAN broken budget\n".to_string()];
        replies.extend(session::parse_script(kestrel_desk::desk::HOUSE_AGENT_SCRIPT).unwrap());
        let mut author = session::scripted("house", replies);
        let s = Run::new(tape, cfg, &[], Bus::new(None).keeping()).expect("session");
        let bus = s.run(&mut author).expect("run");
        bus.events().iter().flat_map(bus::canonical_line).collect()
    })
}

/// Every reader, on the same bytes: none may panic.
fn read_all(bytes: &[u8]) {
    let _ = bus::parse_bus(bytes);
    let _ = Recorded::from_bus("p", bytes);
    let _ = AgentSession::from_bus("p", bytes);
    if let Ok(asks) = read_asks(bytes) {
        let mut r = ErrorsReport::default();
        r.add_file("p", &asks);
        let _ = (r.json(), r.text());
    }
    let text = String::from_utf8_lossy(bytes);
    let _ = desk_session::load(&text);
    let _ = session::parse_script(&text);
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let _ = DeskAgent::from_record(&v);
        }
    }
}

#[test]
fn the_real_bus_reads_back() {
    let b = real_bus();
    let events = bus::parse_bus(b).expect("parses");
    assert!(events.len() > 20);
    assert!(Recorded::from_bus("p", b).unwrap().remaining() >= 3);
    assert!(!read_asks(b).unwrap().is_empty());
    assert!(AgentSession::from_bus("p", b).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_all(&bytes);
    }

    #[test]
    fn json_like_lines_never_panic(lines in proptest::collection::vec("[{}\\[\\]\":,a-z0-9 .-]{0,80}", 0..12)) {
        read_all(lines.join("\n").as_bytes());
    }

    /// A real Bus cut, with lines dropped, duplicated or swapped, and bytes flipped.
    #[test]
    fn a_mangled_real_bus_never_panics(
        cut in 0usize..200_000,
        ops in proptest::collection::vec((0usize..4, any::<usize>(), any::<usize>(), any::<u8>()), 0..6),
    ) {
        let real = real_bus();
        let mut lines: Vec<Vec<u8>> = real.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
        for (op, a, b, byte) in ops {
            if lines.is_empty() {
                break;
            }
            let (i, j) = (a % lines.len(), b % lines.len());
            match op {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let l = lines[i].clone();
                    lines.insert(j, l);
                }
                2 => lines.swap(i, j),
                _ => {
                    if !lines[i].is_empty() {
                        let k = b % lines[i].len();
                        lines[i][k] = byte;
                    }
                }
            }
        }
        let mut bytes = lines.join(&b'\n');
        bytes.truncate(cut.min(bytes.len()));
        read_all(&bytes);
    }
}
