//! Bounded repair: a scripted author that repairs after the guided error ends authored with
//! the repair recorded; one that never repairs ends as the terminal fail-closed pass; a
//! provider error is never counted as a pass.

use kestrel_desk::turn::{
    self, Ask, AuthorKind, Outcome, Profile, RepairAttempt, RepairPolicy, Reply, TurnClass,
    TurnContext, WakePhase, repair::Spent,
};

const COLLAPSED: &str = "# breakout\nPLAN one-line budget 0.2R ttl 15:00 WHEN spot crosses above hod DO buy 1 +1 C @ fair\n";
const FIXED: &str = "# breakout\nPLAN one-line budget 0.2R ttl 15:00\n  WHEN spot crosses above hod\n  DO buy 1 +1 C @ fair\n";

fn model_ctx() -> TurnContext {
    TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Model)
}

#[test]
fn scripted_author_repairs_after_the_guided_error() {
    let mut asks: Vec<Ask> = Vec::new();
    let mut author = |ask: &Ask| {
        asks.push(ask.clone());
        match ask.attempt {
            0 => Reply::text(COLLAPSED),
            _ => {
                // The re-ask carries the guided error and the author's own previous reply.
                let err = ask.guided_error.as_deref().unwrap_or("");
                if err.contains("own line") && ask.previous_reply.as_deref() == Some(COLLAPSED) {
                    Reply::text(FIXED)
                } else {
                    Reply::text(COLLAPSED)
                }
            }
        }
    };
    let run = turn::drive(&mut author, &model_ctx(), RepairPolicy::default());
    assert_eq!(run.turn.outcome.name(), "supersede");
    assert_eq!(run.turn.class(), TurnClass::Authored);
    assert_eq!(run.turn.kestrel, FIXED);
    assert!(run.repaired());
    assert_eq!(run.re_asks, 1);
    assert_eq!(run.fail_closed, None);
    assert_eq!(run.attempts.len(), 2);
    let first = &run.attempts[0];
    assert_eq!(first.written, COLLAPSED);
    assert_eq!(first.outcome, "invalid");
    assert_eq!(first.errors[0].rule, "syntax");
    assert!(
        first
            .guided
            .as_deref()
            .is_some_and(|g| g.starts_with("error code=PARSE rule=syntax"))
    );
    assert_eq!(first.next_parsed, Some(true));
    assert_eq!(run.attempts[1].outcome, "supersede");
    assert_eq!(run.attempts[1].next_parsed, None);
    assert!(run.tokens_spent > 0);
    assert_eq!(asks.len(), 2);
    assert!(asks[0].repair_prompt().is_none());
    let prompt = asks[1].repair_prompt().expect("a re-ask prompt");
    assert!(prompt.contains("error code=PARSE rule=syntax"));
    assert!(prompt.contains(COLLAPSED));
    assert!(prompt.contains("the menu is") || prompt.contains("The menu is"));

    // Every attempt is a serde record the Bus can carry.
    let j = serde_json::to_string(&run).expect("serialize");
    let back: turn::RepairRun = serde_json::from_str(&j).expect("deserialize");
    assert_eq!(back, run);
    let a: RepairAttempt =
        serde_json::from_str(&serde_json::to_string(first).expect("ser")).expect("deserialize");
    assert_eq!(&a, first);
}

#[test]
fn author_that_never_repairs_ends_fail_closed() {
    let mut calls = 0;
    let mut author = |_: &Ask| {
        calls += 1;
        Reply::text(COLLAPSED)
    };
    let run = turn::drive(&mut author, &model_ctx(), RepairPolicy::default());
    assert_eq!(calls, 3, "one ask and repair_budget (2) re-asks");
    assert_eq!(run.re_asks, 2);
    assert_eq!(run.turn.outcome, Outcome::Pass { fail_closed: true });
    assert_eq!(run.turn.outcome.name(), "pass");
    assert_eq!(run.turn.class(), TurnClass::Invalid, "not an authored pass");
    assert_eq!(run.fail_closed, Some(Spent::RepairBudget));
    assert!(!run.repaired());
    let parsed: Vec<Option<bool>> = run.attempts.iter().map(|a| a.next_parsed).collect();
    assert_eq!(parsed, vec![Some(false), Some(false), None]);
    assert!(run.attempts.iter().all(|a| a.outcome == "invalid"));
}

#[test]
fn repair_budget_zero_and_token_budget() {
    let mut author = |_: &Ask| Reply::text(COLLAPSED);
    let policy = RepairPolicy {
        repair_budget: 0,
        authoring_token_budget: None,
    };
    let run = turn::drive(&mut author, &model_ctx(), policy);
    assert_eq!(run.attempts.len(), 1);
    assert_eq!(run.fail_closed, Some(Spent::RepairBudget));

    let mut author = |_: &Ask| Reply::text(COLLAPSED);
    let policy = RepairPolicy {
        repair_budget: 5,
        authoring_token_budget: Some(10),
    };
    let run = turn::drive(&mut author, &model_ctx(), policy);
    assert_eq!(
        run.attempts.len(),
        1,
        "the first reply already spent the budget"
    );
    assert_eq!(run.fail_closed, Some(Spent::TokenBudget));
    assert_eq!(run.turn.outcome, Outcome::Pass { fail_closed: true });
}

#[test]
fn truncated_replies_are_repaired_too() {
    let mut author = |ask: &Ask| {
        if ask.attempt == 0 {
            Reply::CutOff("PLAN x budget 0.2R ttl 15:00\n  WHEN spot".into())
        } else {
            Reply::text("STAND-DOWN ran out of room")
        }
    };
    let run = turn::drive(&mut author, &model_ctx(), RepairPolicy::default());
    assert_eq!(run.attempts[0].outcome, "truncated");
    assert_eq!(run.turn.outcome.name(), "stand-down");
}

#[test]
fn provider_error_is_never_a_pass() {
    // A dead provider: errors, or empty completions.
    for reply in [Reply::ProviderError("HTTP 500".into()), Reply::text("")] {
        let mut calls = 0;
        let mut author = |_: &Ask| {
            calls += 1;
            reply.clone()
        };
        let run = turn::drive(&mut author, &model_ctx(), RepairPolicy::default());
        assert_eq!(calls, 1, "a transport failure is not re-asked as a repair");
        assert_eq!(run.turn.outcome.name(), "provider-error");
        assert_eq!(run.turn.class(), TurnClass::ProviderError);
        assert_eq!(run.fail_closed, None);
    }
    // A provider that dies mid-repair ends provider-error, not the fail-closed pass.
    let mut author = |ask: &Ask| {
        if ask.attempt == 0 {
            Reply::text(COLLAPSED)
        } else {
            Reply::ProviderError("timeout".into())
        }
    };
    let run = turn::drive(&mut author, &model_ctx(), RepairPolicy::default());
    assert_eq!(run.turn.outcome.name(), "provider-error");
    assert_eq!(run.attempts[0].next_parsed, Some(false));
    // A person's empty turn is an authored pass.
    let human = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Human);
    let mut author = |_: &Ask| Reply::text("");
    let run = turn::drive(&mut author, &human, RepairPolicy::default());
    assert_eq!(run.turn.outcome, Outcome::Pass { fail_closed: false });
    assert_eq!(run.turn.class(), TurnClass::Authored);
}
