//! The key map: every desk action, its default key, and overrides from `keys.toml` in the
//! user's config directory:
//!
//! ```toml
//! [keys]
//! play = "p"                 # one key
//! stand_down = ["S", "f9"]   # or several
//! ```
//!
//! Keys are written `a`, `A`, `?`, `space`, `enter`, `esc`, `tab`, `backtab`, `up`, `f5`,
//! `ctrl+s`, `alt+x`. Unknown actions and unparsable keys are reported, never fatal. The
//! editor's own editing keys (arrows, backspace, ...) are fixed; its submit and leave keys
//! are actions and can be remapped.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

macro_rules! actions {
    ($( $v:ident, $name:literal, [$($k:literal),*], $doc:literal; )*) => {
        /// Something a key does.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action { $( #[doc = $doc] $v, )* }

        impl Action {
            /// Every action, in help order.
            pub const ALL: &'static [Action] = &[$(Action::$v),*];

            /// The action's name in `keys.toml`.
            pub fn name(self) -> &'static str { match self { $(Action::$v => $name,)* } }

            /// What it does (for the help screen).
            pub fn describe(self) -> &'static str { match self { $(Action::$v => $doc,)* } }

            /// The default keys.
            pub fn defaults(self) -> &'static [&'static str] { match self { $(Action::$v => &[$($k),*],)* } }
        }
    };
}

actions! {
    Quit, "quit", ["q", "ctrl+c"], "quit the desk (the session is already saved)";
    Help, "help", ["?"], "show every key";
    FocusNext, "focus_next", ["tab"], "focus the next pane";
    FocusPrev, "focus_prev", ["backtab"], "focus the previous pane";
    Editor, "editor", ["e"], "focus the editor";
    PlayPause, "play_pause", ["space"], "play / pause the replay";
    Faster, "faster", ["+", "="], "replay faster (1x, 10x, 60x, 600x, max)";
    Slower, "slower", ["-"], "replay slower";
    StepTick, "step_tick", ["."], "step one tick";
    StepBar, "step_bar", [">"], "step one bar (1 minute)";
    Seek, "seek", ["g"], "seek to a tape time (HH:MM[:SS])";
    Restart, "restart", ["R"], "restart the session from the open (asks first; the book is emptied, the plans armed at the open too)";
    BackToOpen, "back_to_open", ["home"], "go back to the open and replay every act taken so far";
    StandDown, "stand_down", ["s"], "STAND-DOWN, with a reason";
    Undo, "undo", ["u"], "undo your last turn, or your accept or reject of a proposal (asks first): the session runs again without it";
    ShowView, "show_view", ["v"], "SHOW VIEW: pick panes from the catalog";
    Copilot, "copilot", ["c"], "toggle co-pilot (approve agent turns) / autopilot";
    Accept, "accept", ["a"], "co-pilot: accept the agent's proposed turn";
    Reject, "reject", ["x"], "co-pilot: reject the agent's proposed turn";
    Attach, "attach", ["A"], "attach / detach the agent";
    Theme, "theme", ["t"], "next theme";
    BusToggle, "bus_toggle", ["b"], "Bus / Blotter pane: toggle (compact screen: first brings its tab up)";
    Up, "up", ["up", "k"], "select up (Plans, scroll panes)";
    Down, "down", ["down", "j"], "select down";
    Open, "open", ["enter"], "Plans: show the selected plan's canonical text";
    Yank, "yank", ["y"], "Plans: copy the selected plan's text into the editor";
    Submit, "submit", ["ctrl+s", "alt+enter"], "editor: submit the turn through the router";
    Leave, "leave", ["esc"], "editor / dialogs: leave";
    ErrorWhole, "error_whole", ["F2"], "editor: show the first coded error whole, when its area under the text cuts it";
    Left, "left", ["left", "h"], "Chart: cursor one candle left (the window pans)";
    Right, "right", ["right", "l"], "Chart: cursor one candle right";
    PageUp, "page_up", ["pageup"], "lists: a page up · Chart: a window left";
    PageDown, "page_down", ["pagedown"], "lists: a page down · Chart: a window right";
    Top, "top", ["g", "home"], "lists (Plans, Log, View): the top; at the top g seeks (elsewhere g seeks, home goes to the open)";
    Bottom, "bottom", ["G", "end"], "lists: the bottom, and the Log follows new events again · Chart: follow";
    Filter, "filter", ["/"], "Log: filter by kind or plan (enter with nothing clears)";
    Interval, "interval", ["m"], "Chart: 1- / 5-minute candles";
    ZoomIn, "zoom_in", ["z"], "Chart: wider candles";
    ZoomOut, "zoom_out", ["Z"], "Chart: narrower candles (more of the session)";
    ChartSymbol, "chart_symbol", ["o"], "Chart: the other symbol (signal / exec)";
}

/// A key as the desk compares them: code plus the ctrl / alt modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The key.
    pub code: KeyCodeOrd,
    /// Ctrl held.
    pub ctrl: bool,
    /// Alt held.
    pub alt: bool,
}

/// The key codes the map knows (an orderable subset of crossterm's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeOrd {
    /// A character (case significant).
    Char(char),
    /// A function key.
    F(u8),
    /// Enter.
    Enter,
    /// Esc.
    Esc,
    /// Tab.
    Tab,
    /// Shift+Tab.
    BackTab,
    /// Backspace.
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
    /// Delete.
    Delete,
}

impl Key {
    /// The map's key for a terminal key event (`None` for keys the map never binds).
    pub fn from_event(k: &KeyEvent) -> Option<Key> {
        let code = match k.code {
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Enter,
            KeyCode::Esc => KeyCodeOrd::Esc,
            KeyCode::Tab => KeyCodeOrd::Tab,
            KeyCode::BackTab => KeyCodeOrd::BackTab,
            KeyCode::Backspace => KeyCodeOrd::Backspace,
            KeyCode::Up => KeyCodeOrd::Up,
            KeyCode::Down => KeyCodeOrd::Down,
            KeyCode::Left => KeyCodeOrd::Left,
            KeyCode::Right => KeyCodeOrd::Right,
            KeyCode::PageUp => KeyCodeOrd::PageUp,
            KeyCode::PageDown => KeyCodeOrd::PageDown,
            KeyCode::Home => KeyCodeOrd::Home,
            KeyCode::End => KeyCodeOrd::End,
            KeyCode::Delete => KeyCodeOrd::Delete,
            _ => return None,
        };
        Some(Key {
            code,
            ctrl: k.modifiers.contains(KeyModifiers::CONTROL),
            alt: k.modifiers.contains(KeyModifiers::ALT),
        })
    }

    /// Parse `ctrl+s`, `A`, `space`, `f5`, ...
    pub fn parse(s: &str) -> Option<Key> {
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = s.trim();
        loop {
            let lower = rest.to_ascii_lowercase();
            if lower.starts_with("ctrl+") && rest.len() > 5 {
                ctrl = true;
                rest = &rest[5..];
            } else if lower.starts_with("alt+") && rest.len() > 4 {
                alt = true;
                rest = &rest[4..];
            } else {
                break;
            }
        }
        let code = if rest.chars().count() == 1 {
            KeyCodeOrd::Char(rest.chars().next()?)
        } else {
            match rest.to_ascii_lowercase().as_str() {
                "space" => KeyCodeOrd::Char(' '),
                "enter" | "return" => KeyCodeOrd::Enter,
                "esc" | "escape" => KeyCodeOrd::Esc,
                "tab" => KeyCodeOrd::Tab,
                "backtab" | "shift+tab" => KeyCodeOrd::BackTab,
                "backspace" => KeyCodeOrd::Backspace,
                "up" => KeyCodeOrd::Up,
                "down" => KeyCodeOrd::Down,
                "left" => KeyCodeOrd::Left,
                "right" => KeyCodeOrd::Right,
                "pageup" => KeyCodeOrd::PageUp,
                "pagedown" => KeyCodeOrd::PageDown,
                "home" => KeyCodeOrd::Home,
                "end" => KeyCodeOrd::End,
                "delete" | "del" => KeyCodeOrd::Delete,
                f if f.starts_with('f') => {
                    KeyCodeOrd::F(f[1..].parse().ok().filter(|n| *n >= 1 && *n <= 24)?)
                }
                _ => return None,
            }
        };
        // Ctrl+letter is case-insensitive in terminals.
        let code = match code {
            KeyCodeOrd::Char(c) if ctrl => KeyCodeOrd::Char(c.to_ascii_lowercase()),
            c => c,
        };
        Some(Key { code, ctrl, alt })
    }

    /// How the key is written in the footer and help.
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCodeOrd::Char(' ') => "space".to_string(),
            KeyCodeOrd::Char(c) => c.to_string(),
            KeyCodeOrd::F(n) => format!("F{n}"),
            KeyCodeOrd::Enter => "enter".into(),
            KeyCodeOrd::Esc => "esc".into(),
            KeyCodeOrd::Tab => "tab".into(),
            KeyCodeOrd::BackTab => "S-tab".into(),
            KeyCodeOrd::Backspace => "bksp".into(),
            KeyCodeOrd::Up => "↑".into(),
            KeyCodeOrd::Down => "↓".into(),
            KeyCodeOrd::Left => "←".into(),
            KeyCodeOrd::Right => "→".into(),
            KeyCodeOrd::PageUp => "pgup".into(),
            KeyCodeOrd::PageDown => "pgdn".into(),
            KeyCodeOrd::Home => "home".into(),
            KeyCodeOrd::End => "end".into(),
            KeyCodeOrd::Delete => "del".into(),
        };
        let mut s = String::new();
        if self.ctrl {
            s.push_str("C-");
        }
        if self.alt {
            s.push_str("M-");
        }
        s + &base
    }
}

/// Keys two actions may share: a list's top (`g`, `home`) is, outside a list, seek and
/// back to the open.
fn shared_by_design(a: Action, b: Action) -> bool {
    matches!(
        (a, b),
        (Action::Top, Action::Seek | Action::BackToOpen)
            | (Action::Seek | Action::BackToOpen, Action::Top)
    )
}

/// Refuse every remapped entry whose key another action holds: the entry's action keeps its
/// default keys, so no action is left without a key and the footer and help never show a
/// key that does something else. The holder keeps the key: an action not remapped (its
/// default), or the first in help order when both were remapped. A refused entry's defaults
/// can in turn be a key another entry took (`play_pause = "x"` refused gives `space` back,
/// which `faster = "space"` took), so this repeats until no remapped key is contested; the
/// defaults themselves never are (but for the shares by design).
fn refuse_taken_keys(
    by_action: &mut BTreeMap<Action, Vec<Key>>,
    overridden: &mut Vec<Action>,
    warnings: &mut Vec<String>,
    origin: &str,
) {
    while let Some((loser, key, holder)) = contested(by_action, overridden) {
        let defaults: Vec<Key> = loser
            .defaults()
            .iter()
            .filter_map(|k| Key::parse(k))
            .collect();
        let kept = defaults
            .iter()
            .map(Key::label)
            .collect::<Vec<_>>()
            .join(", ");
        warnings.push(format!(
            "{origin}: error code=KEYS key={} message={:?} is also {}'s key; kept the default ({kept})",
            loser.name(),
            key.label(),
            holder.name(),
        ));
        by_action.insert(loser, defaults);
        overridden.retain(|a| *a != loser);
    }
}

/// The first remapped entry (in help order) whose key an action before it, or an action
/// not remapped, holds: `(the entry's action, the key, the holder)`.
fn contested(
    by_action: &BTreeMap<Action, Vec<Key>>,
    overridden: &[Action],
) -> Option<(Action, Key, Action)> {
    let mut holders: BTreeMap<Key, Action> = BTreeMap::new();
    // Actions not remapped hold their defaults first, then the remapped ones in help order.
    let order = Action::ALL
        .iter()
        .filter(|a| !overridden.contains(a))
        .chain(Action::ALL.iter().filter(|a| overridden.contains(a)));
    for a in order {
        for k in by_action.get(a).into_iter().flatten() {
            match holders.get(k) {
                None => {
                    holders.insert(*k, *a);
                }
                Some(b) if b != a && overridden.contains(a) && !shared_by_design(*a, *b) => {
                    return Some((*a, *k, *b));
                }
                Some(_) => {}
            }
        }
    }
    None
}

/// The key map in force.
#[derive(Debug, Clone)]
pub struct KeyMap {
    by_key: BTreeMap<Key, Action>,
    by_action: BTreeMap<Action, Vec<Key>>,
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap::with_overrides(None).0
    }
}

impl KeyMap {
    /// The defaults, with `keys.toml` text (when given) overriding per action. Returns the
    /// map and any warnings.
    pub fn with_overrides(toml_text: Option<&str>) -> (KeyMap, Vec<String>) {
        KeyMap::with_overrides_from(toml_text, "keys.toml")
    }

    /// [`with_overrides`](Self::with_overrides), the warnings naming `origin` (the file's
    /// path). Every bad entry is reported, each in its own message
    /// (`PATH: error code=KEYS key=seek message=not a key: "ctrl+nothing" ...`), and keeps
    /// its action's default keys: a bad entry never half applies.
    pub fn with_overrides_from(toml_text: Option<&str>, origin: &str) -> (KeyMap, Vec<String>) {
        let mut warnings = Vec::new();
        let mut overridden: Vec<Action> = Vec::new();
        let mut by_action: BTreeMap<Action, Vec<Key>> = Action::ALL
            .iter()
            .map(|a| {
                (
                    *a,
                    a.defaults().iter().filter_map(|k| Key::parse(k)).collect(),
                )
            })
            .collect();
        if let Some(text) = toml_text {
            match text.parse::<toml::Table>() {
                Ok(t) => {
                    let table = t.get("keys").and_then(|v| v.as_table()).unwrap_or(&t);
                    for (name, v) in table {
                        let Some(a) = Action::ALL.iter().find(|a| a.name() == name) else {
                            warnings.push(format!(
                                "{origin}: error code=KEYS key={name} message=no action named {name} (? lists them with their names); ignored"
                            ));
                            continue;
                        };
                        let specs: Vec<&toml::Value> = match v {
                            toml::Value::Array(a) => a.iter().collect(),
                            v => vec![v],
                        };
                        let bad: Vec<String> = specs
                            .iter()
                            .filter(|x| x.as_str().and_then(Key::parse).is_none())
                            .map(|x| super::theme::quoted(x))
                            .collect();
                        let keys: Vec<Key> = specs
                            .iter()
                            .filter_map(|x| x.as_str().and_then(Key::parse))
                            .collect();
                        if !bad.is_empty() || keys.is_empty() {
                            let what = if bad.is_empty() {
                                "no keys".to_string()
                            } else {
                                format!("not a key: {}", bad.join(", "))
                            };
                            warnings.push(format!(
                                "{origin}: error code=KEYS key={name} message={what} (write e.g. \"p\", \"ctrl+s\", \"f5\", or a list); kept the default"
                            ));
                            continue;
                        }
                        by_action.insert(*a, keys);
                        overridden.push(*a);
                    }
                }
                Err(e) => warnings.push(format!(
                    "{origin}: error code=KEYS {}; using the default keys",
                    super::theme::toml_error(text, &e)
                )),
            }
        }
        refuse_taken_keys(&mut by_action, &mut overridden, &mut warnings, origin);
        let mut by_key: BTreeMap<Key, Action> = BTreeMap::new();
        for a in Action::ALL {
            for k in by_action.get(a).into_iter().flatten() {
                // The first in help order answers a key shared by design.
                by_key.entry(*k).or_insert(*a);
            }
        }
        (KeyMap { by_key, by_action }, warnings)
    }

    /// The action bound to a key event.
    pub fn action(&self, k: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(k)?;
        // Terminals report shifted characters with SHIFT set; the map ignores SHIFT.
        self.by_key.get(&key).copied()
    }

    /// The first key of an action, as a label.
    /// Is `k` one of the keys of `a` (even when another action took the key first)?
    pub fn binds(&self, a: Action, k: &KeyEvent) -> bool {
        Key::from_event(k).is_some_and(|key| {
            self.by_action
                .get(&a)
                .is_some_and(|keys| keys.contains(&key))
        })
    }

    pub fn label(&self, a: Action) -> String {
        self.by_action
            .get(&a)
            .and_then(|v| v.first())
            .map(Key::label)
            .unwrap_or_else(|| "-".into())
    }

    /// Every key of an action, as labels.
    pub fn labels(&self, a: Action) -> Vec<String> {
        self.by_action
            .get(&a)
            .map(|v| v.iter().map(Key::label).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn defaults_and_parsing() {
        let m = KeyMap::default();
        assert_eq!(
            m.action(&ev(KeyCode::Char(' '), KeyModifiers::NONE)),
            Some(Action::PlayPause)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('s'), KeyModifiers::CONTROL)),
            Some(Action::Submit)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('R'), KeyModifiers::SHIFT)),
            Some(Action::Restart)
        );
        assert_eq!(Key::parse("f5").map(|k| k.code), Some(KeyCodeOrd::F(5)));
        assert_eq!(Key::parse("nonsense"), None);
    }

    #[test]
    fn overrides_replace_one_action_and_report_bad_entries() {
        let (m, w) = KeyMap::with_overrides(Some(
            "[keys]\nplay_pause = \"p\"\nnope = \"z\"\nseek = \"ctrl+nothing\"\n",
        ));
        assert_eq!(
            m.action(&ev(KeyCode::Char('p'), KeyModifiers::NONE)),
            Some(Action::PlayPause)
        );
        assert_eq!(m.action(&ev(KeyCode::Char(' '), KeyModifiers::NONE)), None);
        assert_eq!(
            m.action(&ev(KeyCode::Char('g'), KeyModifiers::NONE)),
            Some(Action::Seek)
        );
        assert_eq!(w.len(), 2, "{w:?}");
        let (_, w) = KeyMap::with_overrides(Some("[keys"));
        assert!(w[0].contains("not valid TOML"));
    }

    #[test]
    fn every_bad_entry_is_reported_and_keeps_its_default() {
        let (m, w) = KeyMap::with_overrides_from(
            Some(
                "[keys]\nseek = \"ctrl+nothing\"\nnope = \"z\"\nstand_down = [\"s\", 7]\nyank = \"q\"\ntheme = \"T\"\n",
            ),
            "/cfg/keys.toml",
        );
        assert_eq!(w.len(), 4, "{w:?}");
        assert_eq!(
            w[0],
            "/cfg/keys.toml: error code=KEYS key=nope message=no action named nope (? lists them with their names); ignored"
        );
        assert_eq!(
            w[1],
            "/cfg/keys.toml: error code=KEYS key=seek message=not a key: \"ctrl+nothing\" (write e.g. \"p\", \"ctrl+s\", \"f5\", or a list); kept the default"
        );
        assert!(
            w[2].contains("key=stand_down message=not a key: 7 "),
            "{w:?}"
        );
        assert_eq!(
            w[3],
            "/cfg/keys.toml: error code=KEYS key=yank message=\"q\" is also quit's key; kept the default (y)"
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('y'), KeyModifiers::NONE)),
            Some(Action::Yank)
        );
        assert!(w.iter().all(|m| !m.contains("String(")), "{w:?}");
        // Bad entries keep their defaults; the good one applies.
        assert_eq!(
            m.action(&ev(KeyCode::Char('g'), KeyModifiers::NONE)),
            Some(Action::Seek)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('s'), KeyModifiers::NONE)),
            Some(Action::StandDown)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('T'), KeyModifiers::NONE)),
            Some(Action::Theme)
        );
    }

    fn key(m: &KeyMap, c: char) -> Option<Action> {
        m.action(&ev(KeyCode::Char(c), KeyModifiers::NONE))
    }

    /// `play_pause = "p"` with `quit = "p"` left play_pause with no key while the footer and
    /// help still showed `p play-pause`, and `p` quit. Now the entry is refused: play_pause
    /// keeps `space`, and the message says so.
    #[test]
    fn two_entries_on_one_key_the_later_keeps_its_default() {
        let (m, w) = KeyMap::with_overrides(Some("[keys]\nplay_pause = \"p\"\nquit = \"p\"\n"));
        assert_eq!(key(&m, 'p'), Some(Action::Quit));
        assert_eq!(key(&m, ' '), Some(Action::PlayPause));
        assert_eq!(m.label(Action::PlayPause), "space");
        assert_eq!(m.labels(Action::Quit), ["p"]);
        assert_eq!(
            w,
            [
                "keys.toml: error code=KEYS key=play_pause message=\"p\" is also quit's key; kept the default (space)"
            ]
        );
    }

    /// `play_pause = "x"` took co-pilot reject's default `x`: reject had no key, `?` listed
    /// `x` for both, and `x` did nothing while a proposal waited. Now the entry is refused.
    #[test]
    fn an_entry_on_another_actions_default_is_refused() {
        let (m, w) = KeyMap::with_overrides(Some("[keys]\nplay_pause = \"x\"\n"));
        assert_eq!(key(&m, 'x'), Some(Action::Reject));
        assert_eq!(key(&m, ' '), Some(Action::PlayPause));
        assert_eq!(m.label(Action::Reject), "x");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].ends_with(
                "key=play_pause message=\"x\" is also reject's key; kept the default (space)"
            ),
            "{w:?}"
        );
        // Moving reject away first frees `x`.
        let (m, w) = KeyMap::with_overrides(Some("[keys]\nplay_pause = \"x\"\nreject = \"r\"\n"));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(key(&m, 'x'), Some(Action::PlayPause));
        assert_eq!(key(&m, 'r'), Some(Action::Reject));
    }

    /// A refused entry's default can be a key another entry took: that entry is refused in
    /// turn, so every action ends with a key and every key does one thing (but the shares
    /// by design).
    #[test]
    fn a_default_given_back_refuses_the_entry_that_took_it() {
        let (m, w) = KeyMap::with_overrides(Some(
            "[keys]\nplay_pause = \"x\"\nfaster = \"space\"\nyank = \"y\"\n",
        ));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("key=play_pause "), "{w:?}");
        assert!(
            w[1].contains(
                "key=faster message=\"space\" is also play_pause's key; kept the default (+, =)"
            ),
            "{w:?}"
        );
        assert_eq!(key(&m, ' '), Some(Action::PlayPause));
        assert_eq!(key(&m, '+'), Some(Action::Faster));
        assert_eq!(key(&m, 'x'), Some(Action::Reject));
        let mut seen = BTreeMap::new();
        for a in Action::ALL {
            assert!(!m.labels(*a).is_empty(), "{} has no key", a.name());
            for k in m.labels(*a) {
                if let Some(b) = seen.insert(k.clone(), *a) {
                    assert!(
                        shared_by_design(*a, b),
                        "{k}: {} and {}",
                        a.name(),
                        b.name()
                    );
                }
            }
        }
    }
}
