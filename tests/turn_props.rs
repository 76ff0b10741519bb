//! Property tests: the router never panics, every input gets exactly one outcome, and an
//! authored turn's canonical text routes back to the same outcome.

use kestrel_desk::turn::{
    self, AuthorKind, Profile, Reply, TurnClass, TurnContext, WakePhase, envelope,
};
use proptest::prelude::*;

fn contexts() -> Vec<TurnContext> {
    let mut v = Vec::new();
    for phase in [WakePhase::Open, WakePhase::Mid] {
        for profile in Profile::ALL {
            for author in [AuthorKind::Human, AuthorKind::Model, AuthorKind::File] {
                v.push(TurnContext::new(phase, *profile, author));
            }
        }
    }
    v
}

/// Text built from the language's own pieces, so generated replies get past the first token.
fn kestrelish() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "PLAN p budget 0.2R ttl 15:00",
        "\n  WHEN spot crosses above hod",
        "\n  DO buy 1 +1 C @ fair",
        "\n  EXIT spot < vwap held 60s @ fair",
        "\n  TP 2x frac 0.5 @ fair",
        "STAND-DOWN chop — no edge",
        "SHOW VIEW v budget 900",
        "\n  gex 0dte",
        "\n  tape 5m",
        "CANCEL p",
        "WAKE w WHEN T-30",
        "VIEW s\n  levels",
        "# journal line",
        " # trailing",
        "\n",
        "\n\n",
        "```kestrel\n",
        "\n```\n",
        "~~~",
        "{\"actions\":[",
        "{\"kind\":\"standDown\",\"reason\":\"x\"}",
        "{\"kind\":\"supersede\",\"document\":\"PLAN q budget 0.1R ttl 15:00\\n  WHEN spot > hod\\n  DO buy 1 ATM C @ fair\"}",
        "]}",
        "{\"requestView\":{\"view\":\"VIEW v\\n  tape\"}}",
        ",",
        "\"",
        "\\",
        "  ",
        "\t",
        "\r\n",
        "é—≠",
        "WHEN",
        "@ mid",
        "held 30s",
    ]);
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

fn check_one(text: &str) -> Result<(), TestCaseError> {
    for ctx in contexts() {
        let t = turn::route(&Reply::text(text), &ctx);
        let class = t.class();
        // Exactly one outcome; the classes are consistent with the record.
        match class {
            TurnClass::Authored => {
                prop_assert!(!t.outcome.is_refused());
                // The canonical text is a valid turn with the same outcome.
                let human = TurnContext {
                    author: AuthorKind::Human,
                    ..ctx.clone()
                };
                let again = turn::route(&Reply::text(t.kestrel.clone()), &human);
                prop_assert_eq!(again.outcome.name(), t.outcome.name(), "{:?}", t.kestrel);
                prop_assert_eq!(&again.kestrel, &t.kestrel);
                prop_assert!(envelope::project(&t).is_some());
            }
            TurnClass::Invalid => {
                prop_assert!(!t.outcome.errors().is_empty());
                prop_assert!(t.kestrel.is_empty());
            }
            TurnClass::ProviderError => {
                prop_assert_eq!(ctx.author, AuthorKind::Model);
                prop_assert!(text.trim().is_empty());
            }
        }
        let cut = turn::route(&Reply::CutOff(text.to_string()), &ctx);
        prop_assert_ne!(cut.class(), TurnClass::Authored);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn router_never_panics_on_arbitrary_text(text in any::<String>()) {
        check_one(&text)?;
    }

    #[test]
    fn router_never_panics_on_kestrel_like_text(text in kestrelish()) {
        check_one(&text)?;
    }

    #[test]
    fn router_never_panics_on_json_like_text(text in "[{}\\[\\]\":,a-z \\\\n]{0,60}") {
        check_one(&text)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn token_meter_never_fails(text in kestrelish()) {
        let ctx = TurnContext::new(WakePhase::Open, Profile::ViewshopV2, AuthorKind::Human);
        let t = turn::route(&Reply::text(text.clone()), &ctx);
        let m = kestrel_desk::tokens::measure(&text, &t, kestrel_desk::tokens::Encoding::Cl100k);
        prop_assert!(m.is_ok());
    }
}
