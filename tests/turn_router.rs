//! The router's own fixtures: every route, the mix rule, the menu, JSON shapes, truncation,
//! the three outcome classes and the Bus records.

use kestrel_desk::lang::{self, Mode, Scope};
use kestrel_desk::turn::{
    self, AuthorKind, Outcome, Profile, Reply, RoutedTurn, Source, TurnClass, TurnContext,
    WakePhase, envelope,
};

fn ctx(phase: WakePhase, profile: Profile) -> TurnContext {
    TurnContext::new(phase, profile, AuthorKind::Human)
}
fn mid() -> TurnContext {
    ctx(WakePhase::Mid, Profile::AuthoringV2)
}
fn open_shop() -> TurnContext {
    ctx(WakePhase::Open, Profile::ViewshopV2)
}
fn route(text: &str, c: &TurnContext) -> RoutedTurn {
    turn::route(&Reply::text(text), c)
}
fn first_error(t: &RoutedTurn) -> turn::TurnError {
    t.outcome
        .errors()
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no error on {:?}", t.outcome))
}

const PLAN: &str = "# thesis: drive is real\nPLAN drive budget 0.2R ttl +40m\n  WHEN spot crosses above hod\n  DO buy 1 +1 C @ min(fair, ask)\n  EXIT spot < vwap held 90s @ fair\n";

// ------------------------------------------------------------------ routes

#[test]
fn supersede_plan_with_journal() {
    let t = route(PLAN, &mid());
    assert_eq!(t.outcome.name(), "supersede");
    assert_eq!(t.class(), TurnClass::Authored);
    assert_eq!(t.journal, vec!["thesis: drive is real"]);
    assert_eq!(t.kestrel, PLAN, "canonical text keeps the comment");
    assert_eq!(t.source, Source::Kestrel);
    match t.outcome {
        Outcome::Supersede {
            plans,
            wakes,
            views,
        } => {
            assert_eq!(plans, vec!["drive"]);
            assert!(wakes.is_empty() && views.is_empty());
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn supersede_module_with_wake_and_standing_view() {
    let src = "USING signal SPX exec SPY 0dte\nVIEW scan budget 600\n  tape 5m\n  levels\nWAKE next WHEN spot crosses above hod DELIVER scan\nPLAN p budget 0.1R ttl 15:00\n  WHEN plan(p).fired OR spot > hod held 30s\n  DO buy 1 ATM C @ fair\n";
    let t = route(src, &mid());
    match &t.outcome {
        Outcome::Supersede {
            plans,
            wakes,
            views,
        } => {
            assert_eq!(plans, &vec!["p".to_string()]);
            assert_eq!(wakes, &vec!["next".to_string()]);
            assert_eq!(views, &vec!["scan".to_string()]);
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn stand_down_reason_verbatim() {
    let t = route("  STAND-DOWN  chop — no edge; 0DTE ≠ lottery  \n", &mid());
    assert_eq!(
        t.outcome,
        Outcome::StandDown {
            reason: "chop — no edge; 0DTE ≠ lottery".into()
        }
    );
    assert_eq!(t.kestrel, "STAND-DOWN chop — no edge; 0DTE ≠ lottery\n");
    let t = route("# nothing works today\nSTAND-DOWN\n# end\n", &mid());
    assert_eq!(t.outcome, Outcome::StandDown { reason: "".into() });
    assert_eq!(t.journal, vec!["nothing works today", "end"]);
}

#[test]
fn view_request_reasons() {
    let t = route(
        "SHOW VIEW probe budget 900   # gamma first\n  gex 0dte\n",
        &open_shop(),
    );
    assert_eq!(
        t.outcome,
        Outcome::ViewRequest {
            view: "probe".into(),
            reason: Some("gamma first".into())
        }
    );
    assert!(t.journal.is_empty());
    let t = route("# skew tells\nSHOW VIEW probe\n  skew 25d\n", &open_shop());
    assert_eq!(
        t.outcome,
        Outcome::ViewRequest {
            view: "probe".into(),
            reason: Some("skew tells".into())
        }
    );
    let t = route("SHOW VIEW probe\n  tape\n", &open_shop());
    assert_eq!(
        t.outcome,
        Outcome::ViewRequest {
            view: "probe".into(),
            reason: None
        }
    );
}

#[test]
fn cancel_and_its_scope() {
    let t = route("CANCEL drive-follow\n", &mid());
    assert_eq!(
        t.outcome,
        Outcome::Cancel {
            target: "drive-follow".into()
        }
    );
    let mut c = mid();
    let mut s = Scope::default();
    s.plans.insert("fade".into());
    c.standing = Some(s);
    let t = route("CANCEL drive-follow\n", &c);
    let e = first_error(&t);
    assert_eq!(e.rule, "unknown-ref");
    assert!(e.message.contains("fade"), "{}", e.message);
    assert_eq!(route("CANCEL fade\n", &c).outcome.name(), "cancel");
}

#[test]
fn standing_book_in_scope_for_refs() {
    let src = "PLAN add budget 0.1R ttl 15:00\n  WHEN plan(base).filled\n  DO buy 1 ATM C @ fair\n";
    assert_eq!(first_error(&route(src, &mid())).rule, "unknown-ref");
    let mut c = mid();
    let mut s = Scope::default();
    s.plans.insert("base".into());
    c.standing = Some(s);
    assert_eq!(route(src, &c).outcome.name(), "supersede");
}

#[test]
fn pass_and_provider_error_by_author() {
    for author in [AuthorKind::Human, AuthorKind::File, AuthorKind::Model] {
        let c = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, author);
        let t = route("# all quiet\n#\n# let it work\n", &c);
        assert_eq!(t.outcome, Outcome::Pass { fail_closed: false });
        assert_eq!(t.class(), TurnClass::Authored);
        assert_eq!(t.journal, vec!["all quiet", "", "let it work"]);
        for empty in ["", "  \n\n\t"] {
            let t = route(empty, &c);
            if author == AuthorKind::Model {
                assert_eq!(t.outcome.name(), "provider-error");
                assert_eq!(t.class(), TurnClass::ProviderError);
            } else {
                assert_eq!(t.outcome, Outcome::Pass { fail_closed: false });
            }
        }
    }
    // A model that writes an empty fence wrote something: a pass, not a dead provider.
    let c = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Model);
    assert_eq!(route("```kestrel\n```\n", &c).outcome.name(), "pass");
    let t = turn::route(&Reply::ProviderError("HTTP 503".into()), &c);
    assert_eq!(
        t.outcome,
        Outcome::ProviderError {
            message: "HTTP 503".into()
        }
    );
    assert_ne!(t.outcome.name(), "pass");
}

#[test]
fn invalid_carries_guided_error_mapped_to_the_reply() {
    let src = "Here you go:\n\n```kestrel\n# one line\nPLAN x budget 0.2R ttl 15:00 WHEN spot > hod DO buy 1 ATM C @ fair\n```\n";
    let t = route(src, &mid());
    assert_eq!(t.outcome.name(), "invalid");
    let e = first_error(&t);
    assert_eq!((e.code.as_str(), e.rule.as_str()), ("PARSE", "syntax"));
    assert_eq!(e.line, 5, "line of the reply, not of the fenced body");
    assert!(e.message.contains("own line"));
    assert_eq!(
        t.journal,
        vec!["one line"],
        "the journal is lifted even when invalid"
    );
    assert!(t.kestrel.is_empty());
    assert!(turn::guided_text(t.outcome.errors()).starts_with("error code=PARSE rule=syntax"));
    // Indentation trimmed off the first line moves the column.
    let t = route(
        "   PLAN x budget 0R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n",
        &mid(),
    );
    let e = first_error(&t);
    assert_eq!(e.rule, "budget-nonpositive");
    assert_eq!((e.line, e.col), (1, 4 + "PLAN x budget ".len()));
}

#[test]
fn semantic_rules_refuse() {
    let t = route(
        "PLAN m budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ mid\n",
        &mid(),
    );
    assert_eq!(first_error(&t).rule, "price-mark");
    let t = route(
        "PLAN m budget 0.2R ttl 15:00\n  WHEN spot crosses above hod held 60s\n  DO buy 1 ATM C @ fair\n",
        &mid(),
    );
    assert_eq!(first_error(&t).rule, "held-cross");
}

#[test]
fn prose_without_fence_is_invalid_not_guessed() {
    let t = route(
        "I think we should buy calls.\nPLAN x budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n",
        &mid(),
    );
    assert_eq!(t.outcome.name(), "invalid");
    assert_eq!(first_error(&t).line, 1);
}

#[test]
fn extraction_variants() {
    let body = "STAND-DOWN tired";
    for src in [
        format!("```kestrel\n{body}\n```"),
        format!("```\n{body}\n```\n"),
        format!("~~~\n{body}\n~~~"),
        format!("Sure.\n\n```kestrel\n{body}\n```\nDone."),
        format!("\n\n   {body}   \n\n"),
    ] {
        let t = route(&src, &mid());
        assert_eq!(
            t.outcome,
            Outcome::StandDown {
                reason: "tired".into()
            },
            "{src:?}"
        );
    }
}

// ------------------------------------------------------------------ mix rule

#[test]
fn a_turn_never_mixes() {
    let cases = [
        (
            "STAND-DOWN x\nPLAN p budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n",
            "never a mix",
            2,
        ),
        (
            "PLAN p budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\nSTAND-DOWN x\n",
            "never a mix",
            4,
        ),
        ("STAND-DOWN x\nCANCEL p\n", "second directive", 2),
        ("CANCEL a\n# and\nCANCEL b\n", "second directive", 3),
        ("WAKE w WHEN spot > hod\nCANCEL p\n", "never a mix", 2),
    ];
    for (src, says, line) in cases {
        let t = route(src, &mid());
        assert_eq!(t.outcome.name(), "invalid", "{src}");
        let e = first_error(&t);
        assert_eq!(e.rule, "turn-mix", "{src}");
        assert!(e.message.contains(says), "{}", e.message);
        assert_eq!(e.line, line, "{src}");
    }
    let t = route("SHOW VIEW a\n  tape\nSHOW VIEW b\n  levels\n", &open_shop());
    assert!(first_error(&t).message.contains("second directive"));
}

// ------------------------------------------------------------------ the menu

#[test]
fn the_menu_gates_show_view() {
    let src = "SHOW VIEW probe\n  gex 0dte\n";
    assert_eq!(route(src, &open_shop()).outcome.name(), "view-request");
    for c in [
        ctx(WakePhase::Mid, Profile::ViewshopV2),
        ctx(WakePhase::Open, Profile::AuthoringV2),
        ctx(WakePhase::Mid, Profile::AuthoringV2),
        ctx(WakePhase::Open, Profile::AuthoringV1),
    ] {
        let t = route(src, &c);
        let e = first_error(&t);
        assert_eq!(e.rule, "menu");
        assert!(e.message.contains("not on the menu"), "{}", e.message);
        assert!(
            e.message.contains("the menu is {PLAN/WAKE/VIEW supersede"),
            "{}",
            e.message
        );
    }
    let mut c = open_shop();
    c.views_requested = 2;
    let e = first_error(&route(src, &c));
    assert!(
        e.message.contains("cap of 2 per wake is spent"),
        "{}",
        e.message
    );
    c.views_requested = 1;
    assert_eq!(route(src, &c).outcome.name(), "view-request");
}

#[test]
fn desk_configuration_is_not_a_move() {
    for src in [
        "POD p RISK day-loss 2R -> halt\n",
        "BOOK b budget 1R coverage SPY\n",
        "GRADE plan x OVER tapes/* FILL strict-cross-v1\n",
        "PLAN p budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\nPOD q RISK day-loss 2R -> halt\n",
    ] {
        let t = route(src, &mid());
        let e = first_error(&t);
        assert_eq!(e.rule, "menu", "{src}");
        assert!(e.message.contains("the menu is"), "{}", e.message);
    }
}

// ------------------------------------------------------------------ JSON shapes

#[test]
fn json_supersede_logged_as_kestrel() {
    let src = r#"{"journal":"breakout\non breadth","actions":[{"kind":"supersede","document":"PLAN j budget 0.2R ttl 15:00\n  WHEN spot crosses above hod\n  DO buy 1 +1 C @ min(fair, ask)"}]}"#;
    let t = route(src, &mid());
    assert_eq!(t.outcome.name(), "supersede");
    assert_eq!(t.source, Source::JsonEnvelope);
    assert_eq!(t.journal, vec!["breakout", "on breadth"]);
    assert_eq!(
        t.kestrel,
        "# breakout\n# on breadth\nPLAN j budget 0.2R ttl 15:00\n  WHEN spot crosses above hod\n  DO buy 1 +1 C @ min(fair, ask)\n"
    );
    assert!(lang::check(&t.kestrel, Mode::Turn).is_ok());
    assert!(!t.canonical_json().contains("\\\"actions\\\""));
}

#[test]
fn json_kinds() {
    let c = open_shop();
    let cases: &[(&str, &str)] = &[
        (
            r#"{"journal":"","actions":[{"kind":"standDown","reason":"no edge"}]}"#,
            "stand-down",
        ),
        (
            r#"{"actions":[{"kind":"scheduleWake","wake":"WAKE w WHEN T-30"}]}"#,
            "supersede",
        ),
        (
            r#"{"actions":[{"kind":"requestView","view":"VIEW v\n  levels","reason":"r"}]}"#,
            "view-request",
        ),
        (
            r#"{"requestView":{"view":"SHOW VIEW v\n  levels"}}"#,
            "view-request",
        ),
        (r#"{"actions":[{"kind":"cancel","target":"p"}]}"#, "cancel"),
        (r#"{"journal":"quiet","actions":[]}"#, "pass"),
        (
            "```json\n{\"actions\":[{\"kind\":\"standDown\",\"reason\":\"x\"}]}\n```",
            "stand-down",
        ),
        (
            "Here:\n```\n{\"actions\":[{\"kind\":\"standDown\"}]}\n```",
            "stand-down",
        ),
        (
            r#"{"actions":[{"kind":"supersede","document":"PLAN p budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair"},{"kind":"scheduleWake","wake":"WAKE w WHEN T-30"}]}"#,
            "supersede",
        ),
    ];
    for (src, want) in cases {
        let t = route(src, &c);
        assert_eq!(t.outcome.name(), *want, "{src}: {:?}", t.outcome);
        assert_eq!(t.source, Source::JsonEnvelope, "{src}");
    }
    let t = route(r#"{"journal":"quiet","actions":[]}"#, &c);
    assert_eq!(t.journal, vec!["quiet"]);
    let t = route(
        r#"{"actions":[{"kind":"requestView","view":"VIEW v\n  levels","reason":"need\nlevels"}]}"#,
        &c,
    );
    assert_eq!(
        t.outcome,
        Outcome::ViewRequest {
            view: "v".into(),
            reason: Some("need levels".into())
        }
    );
}

#[test]
fn json_refusals() {
    let c = mid();
    // Valid JSON of another shape names the expected keys.
    for src in [r#"{"order":{"side":"buy"}}"#, "{}", r#"{"actions":{}}"#] {
        let t = route(src, &c);
        assert_eq!(t.outcome.name(), "invalid", "{src}");
        let m = first_error(&t).message;
        for k in ["journal", "actions", "kind", "requestView"] {
            assert!(m.contains(k), "{src}: {m}");
        }
    }
    let t = route(r#"{"actions":[{"kind":"placeOrder"}]}"#, &c);
    assert!(
        first_error(&t)
            .message
            .contains("unknown action kind `placeOrder`")
    );
    // Broken JSON that is complete is invalid, not truncated.
    assert_eq!(route(r#"{"actions": [}"#, &c).outcome.name(), "invalid");
    assert_eq!(route(r#"{"a":1} trailing"#, &c).outcome.name(), "invalid");
    // The document inside the envelope still meets every rule.
    let t = route(
        r#"{"actions":[{"kind":"supersede","document":"PLAN x budget 0.2R ttl 15:00 WHEN spot > hod DO buy 1 ATM C @ fair"}]}"#,
        &c,
    );
    assert_eq!(first_error(&t).rule, "syntax");
    // Two acts that cannot share a turn are a mix.
    let t = route(
        r#"{"actions":[{"kind":"standDown","reason":"x"},{"kind":"cancel","target":"p"}]}"#,
        &c,
    );
    assert_eq!(first_error(&t).rule, "turn-mix");
    // SHOW VIEW through the envelope is still gated by the menu.
    let t = route(r#"{"requestView":{"view":"VIEW v\n  levels"}}"#, &c);
    assert_eq!(first_error(&t).rule, "menu");
}

#[test]
fn truncation_is_its_own_outcome() {
    let c = mid();
    for src in [
        r#"{"journal":"x","actions":[{"kind":"supersede","document":"PLAN cut"#,
        "{",
        "```json\n{\"actions\": [",
        "```kestrel\nPLAN cut budget 0.2R ttl 15:00\n  WHEN spot crosses above hod\n  DO buy 1 +1 C @",
    ] {
        let t = route(src, &c);
        assert_eq!(t.outcome.name(), "truncated", "{src}");
        assert_eq!(t.class(), TurnClass::Invalid);
        assert_eq!(first_error(&t).rule, "truncated");
    }
    // An unclosed fence around a valid turn is fine.
    assert_eq!(
        route("```kestrel\nSTAND-DOWN x\n", &c).outcome.name(),
        "stand-down"
    );
    // The provider's token limit fails closed even when the prefix parses.
    let t = turn::route(&Reply::CutOff("STAND-DOWN x".into()), &c);
    assert_eq!(t.outcome.name(), "truncated");
    assert!(t.kestrel.is_empty());
    assert!(
        first_error(&t).message.contains("output-token limit"),
        "{}",
        first_error(&t).message
    );
    // Stopped for another reason, it fails closed the same way, and says why: a content
    // filter's stop was told to write a shorter turn.
    for (reason, says) in [
        (
            "content_filter",
            "the provider's content filter stopped the reply",
        ),
        (
            "tool_calls",
            "the provider stopped the reply (finish_reason tool_calls)",
        ),
    ] {
        let t = turn::route(
            &Reply::Stopped {
                text: "STAND-DOWN x".into(),
                reason: reason.into(),
            },
            &c,
        );
        assert_eq!(t.outcome.name(), "truncated", "{reason}");
        assert!(t.kestrel.is_empty());
        let e = first_error(&t);
        assert_eq!(
            (e.code.as_str(), e.rule.as_str()),
            ("TRUNCATED", "truncated")
        );
        assert!(e.message.starts_with(says), "{reason}: {}", e.message);
        assert!(!e.message.contains("output-token limit"), "{}", e.message);
    }
}

// ------------------------------------------------------------------ projection

#[test]
fn projection_round_trips_through_ingest() {
    let c = open_shop();
    for src in [
        PLAN,
        "STAND-DOWN edgeless chop — no setup\n",
        "# a\n# b\n",
        "CANCEL p\n",
        "SHOW VIEW probe budget 900 # why not\n  gex 0dte\n",
        "# pre\nWAKE w WHEN T-30\n",
    ] {
        let t = route(src, &c);
        let json = envelope::project(&t).unwrap_or_else(|| panic!("no projection for {src}"));
        let back = route(&json, &c);
        assert_eq!(back.outcome, t.outcome, "{src} -> {json}");
        assert_eq!(back.journal, t.journal, "{src} -> {json}");
        assert_eq!(back.kestrel, t.kestrel, "{src} -> {json}");
    }
    let t = route("{", &c);
    assert_eq!(envelope::project(&t), None);
}

#[test]
fn projection_is_the_legacy_wire_shape() {
    let t = route("STAND-DOWN no edge\n", &mid());
    assert_eq!(
        envelope::project(&t).as_deref(),
        Some(r#"{"journal":"","actions":[{"kind":"standDown","reason":"no edge"}]}"#)
    );
    let t = route("SHOW VIEW p budget 900 # r\n  gex 0dte\n", &open_shop());
    assert_eq!(
        envelope::project(&t).as_deref(),
        Some(r#"{"requestView":{"view":"VIEW p budget 900\n  gex 0dte","reason":"r"}}"#)
    );
}

// ------------------------------------------------------------------ Bus records

#[test]
fn routed_turns_are_canonical_serde_records() {
    let c = open_shop();
    let srcs = [
        PLAN,
        "STAND-DOWN x",
        "SHOW VIEW p\n  tape",
        "CANCEL p",
        "# q",
        "PLAN x",
        "{\"a\":",
        "Looking at the tape, here is my plan:\n```kestrel\nSTAND-DOWN tape is dead\n```\nThanks",
    ];
    for s in srcs {
        let t = route(s, &c);
        let j = t.canonical_json();
        let back: RoutedTurn = serde_json::from_str(&j).expect("deserialize");
        assert_eq!(back, t);
        assert_eq!(back.canonical_json(), j, "canonical bytes are stable");
        assert!(
            !j.contains("Looking at the tape"),
            "the raw reply never crosses: {j}"
        );
        let v: serde_json::Value = serde_json::from_str(&j).expect("json");
        assert_eq!(v["outcome"], t.outcome.name());
    }
    let pe = turn::route(&Reply::ProviderError("timeout".into()), &c);
    let back: RoutedTurn = serde_json::from_str(&pe.canonical_json()).expect("deserialize");
    assert_eq!(back.class(), TurnClass::ProviderError);
}
