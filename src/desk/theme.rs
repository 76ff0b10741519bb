//! Themes: the bundled `themes/*.toml`, overridden key by key by files of the same name in
//! the user's config directory (`<config>/themes/<name>.toml`). A user file with a new name
//! is a new theme over the dark defaults. A malformed file, or a colour that does not parse,
//! never stops the desk: the bundled value stays and a message says what was wrong.

use ratatui::style::Color;
use std::collections::BTreeMap;
use std::path::Path;

/// The bundled themes: (name, TOML text). The first is the default.
pub const BUNDLED: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// The colour roles a theme gives, each with its `section.key` in the TOML files. Drawing code
/// asks for a role by method (`theme.ui_muted()`), never by a string, so a misspelt role is a
/// compile error and a theme file's unknown key is a warning.
macro_rules! roles {
    ($($(#[$doc:meta])* $method:ident => $variant:ident, $key:literal;)*) => {
        /// A colour role of the theme.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Role {
            $($(#[$doc])* $variant,)*
        }

        impl Role {
            /// Every role, in the files' order.
            pub const ALL: &'static [Role] = &[$(Role::$variant,)*];

            /// The role's `section.key`.
            pub fn key(self) -> &'static str {
                match self {
                    $(Role::$variant => $key,)*
                }
            }

            /// The role named by `section.key`.
            pub fn from_key(k: &str) -> Option<Role> {
                match k {
                    $($key => Some(Role::$variant),)*
                    _ => None,
                }
            }
        }

        impl Theme {
            $($(#[$doc])* pub fn $method(&self) -> Color {
                self.get(Role::$variant)
            })*
        }
    };
}

roles! {
    /// The screen's background.
    ui_bg => UiBg, "ui.bg";
    /// Ordinary text.
    ui_fg => UiFg, "ui.fg";
    /// Secondary text (axes, hints, headers).
    ui_muted => UiMuted, "ui.muted";
    /// A pane's border.
    ui_border => UiBorder, "ui.border";
    /// The focused pane's border.
    ui_border_focus => UiBorderFocus, "ui.border_focus";
    /// Pane titles.
    ui_title => UiTitle, "ui.title";
    /// The status line's background.
    ui_status_bg => UiStatusBg, "ui.status_bg";
    /// The status line's text.
    ui_status_fg => UiStatusFg, "ui.status_fg";
    /// The selection / cursor background.
    ui_selection_bg => UiSelectionBg, "ui.selection_bg";
    /// A candle that closed at or above its open; a buy.
    market_up => MarketUp, "market.up";
    /// A candle that closed below its open; a sell.
    market_down => MarketDown, "market.down";
    /// The high-of-day level.
    market_hod => MarketHod, "market.hod";
    /// The low-of-day level.
    market_lod => MarketLod, "market.lod";
    /// The VWAP level.
    market_vwap => MarketVwap, "market.vwap";
    /// A fill.
    market_fill => MarketFill, "market.fill";
    /// A plan that fired.
    market_fire => MarketFire, "market.fire";
    /// A good outcome.
    state_ok => StateOk, "state.ok";
    /// A warning (a clamp, a suppressed wake).
    state_warn => StateWarn, "state.warn";
    /// An error (a veto, a refusal).
    state_error => StateError, "state.error";
    /// Information (an order).
    state_info => StateInfo, "state.info";
    /// Kestrel keywords.
    syntax_keyword => SyntaxKeyword, "syntax.keyword";
    /// Kestrel clause heads.
    syntax_clause => SyntaxClause, "syntax.clause";
    /// Plan names.
    syntax_name => SyntaxName, "syntax.name";
    /// Numbers.
    syntax_number => SyntaxNumber, "syntax.number";
    /// Anchors.
    syntax_anchor => SyntaxAnchor, "syntax.anchor";
    /// Series names.
    syntax_series => SyntaxSeries, "syntax.series";
    /// Comments.
    syntax_comment => SyntaxComment, "syntax.comment";
    /// The span of a coded error.
    syntax_error => SyntaxError, "syntax.error";
}

/// A resolved theme: a colour for every [`Role`].
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// The theme's name.
    pub name: String,
    colors: Vec<Color>,
}

impl Theme {
    /// The colour of a role (the terminal's default when no file gave one).
    pub fn get(&self, r: Role) -> Color {
        self.colors.get(r as usize).copied().unwrap_or(Color::Reset)
    }

    /// The screen's background.
    pub fn bg(&self) -> Color {
        self.ui_bg()
    }

    /// Ordinary text.
    pub fn fg(&self) -> Color {
        self.ui_fg()
    }

    /// Secondary text (axes, hints).
    pub fn muted(&self) -> Color {
        self.ui_muted()
    }

    /// The selection / cursor background.
    pub fn selection(&self) -> Color {
        self.ui_selection_bg()
    }

    /// A candle that closed at or above its open.
    pub fn candle_up(&self) -> Color {
        self.market_up()
    }

    /// A candle that closed below its open.
    pub fn candle_down(&self) -> Color {
        self.market_down()
    }

    /// A chart level line and its label.
    pub fn level(&self, l: super::chart::Level) -> Color {
        match l {
            super::chart::Level::Vwap => self.market_vwap(),
            super::chart::Level::Hod => self.market_hod(),
            super::chart::Level::Lod => self.market_lod(),
        }
    }

    /// A chart mark: a fire, a buy or a sell.
    pub fn mark(&self, k: crate::session::candles::MarkKind) -> Color {
        use crate::session::candles::MarkKind;
        match k {
            MarkKind::Fire => self.market_fire(),
            MarkKind::Buy => self.market_up(),
            MarkKind::Sell => self.market_down(),
        }
    }

    /// The colour of a kind of event in the log.
    pub fn event(&self, k: super::log::Kind) -> Color {
        use super::log::Kind;
        match k {
            Kind::Session => self.ui_muted(),
            Kind::Armed | Kind::Plan => self.syntax_clause(),
            Kind::Fired => self.market_fire(),
            Kind::Order => self.state_info(),
            Kind::Fill => self.market_fill(),
            Kind::Risk | Kind::Error => self.state_error(),
            Kind::Mark => self.ui_muted(),
            Kind::Wake => self.syntax_series(),
            Kind::Suppressed => self.state_warn(),
            Kind::Frame => self.syntax_anchor(),
            Kind::Turn => self.syntax_keyword(),
            Kind::StandDown => self.state_warn(),
            Kind::Headline => self.syntax_number(),
            Kind::Other => self.ui_fg(),
        }
    }

    /// Every role's key, in the files' order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> {
        Role::ALL.iter().map(|r| r.key())
    }
}

/// Parse a colour: `#rrggbb`, or a terminal colour name (`red`, `lightblue`, `reset`, ...).
pub fn parse_color(s: &str) -> Option<Color> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let v = u32::from_str_radix(hex, 16).ok()?;
        return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
    }
    s.parse::<Color>().ok()
}

/// A TOML value as a message quotes it: a string in quotes (`"notacolor"`), anything else
/// as TOML writes it (`12`, `[1, 2]`), never Rust's debug form.
pub fn quoted(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => {
            format!("[{}]", a.iter().map(quoted).collect::<Vec<_>>().join(", "))
        }
        toml::Value::Table(_) => "a table".into(),
    }
}

/// A TOML parse error as a coded message's fields: `line=N message=not valid TOML (...)`
/// (the line where the span starts, when the error has one).
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let line = e
        .span()
        .map(|s| {
            format!(
                "line={} ",
                text.get(..s.start).unwrap_or(text).matches('\n').count() + 1
            )
        })
        .unwrap_or_default();
    format!("{line}message=not valid TOML ({})", e.message().trim())
}

fn flatten(t: &toml::Table, prefix: &str, out: &mut BTreeMap<String, toml::Value>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(t, &key, out),
            v => {
                out.insert(key, v.clone());
            }
        }
    }
}

/// Resolve a theme from its base TOML and an optional user override (text and where it came
/// from, for messages). Returns the theme and any warnings.
pub fn resolve(name: &str, base: &str, user: Option<(&str, &str)>) -> (Theme, Vec<String>) {
    let mut warnings = Vec::new();
    let mut flat = BTreeMap::new();
    match base.parse::<toml::Table>() {
        Ok(t) => flatten(&t, "", &mut flat),
        Err(e) => warnings.push(format!(
            "bundled theme {name}: error code=THEME {}",
            toml_error(base, &e)
        )),
    }
    let mut colors = vec![Color::Reset; Role::ALL.len()];
    for (k, v) in &flat {
        match (Role::from_key(k), v.as_str().and_then(parse_color)) {
            (Some(r), Some(c)) => colors[r as usize] = c,
            _ if k == "name" => {}
            _ => warnings.push(format!(
                "bundled theme {name}: error code=THEME key={k} message={} is not a colour role",
                quoted(v)
            )),
        }
    }
    if let Some((text, origin)) = user {
        match text.parse::<toml::Table>() {
            Ok(t) => {
                let mut uflat = BTreeMap::new();
                flatten(&t, "", &mut uflat);
                for (k, v) in uflat {
                    if k == "name" {
                        continue;
                    }
                    let Some(r) = Role::from_key(&k) else {
                        warnings.push(format!(
                            "{origin}: error code=THEME key={k} message=not a colour role the desk knows (the bundled themes list them all); ignored"
                        ));
                        continue;
                    };
                    match v.as_str().and_then(parse_color) {
                        Some(c) => colors[r as usize] = c,
                        None => warnings.push(format!(
                            "{origin}: error code=THEME key={k} message=not a colour: {} (expected #rrggbb or a colour name); kept the default",
                            quoted(&v)
                        )),
                    }
                }
            }
            Err(e) => warnings.push(format!(
                "{origin}: error code=THEME {}; using the bundled {name} theme",
                toml_error(text, &e)
            )),
        }
    }
    (
        Theme {
            name: name.to_string(),
            colors,
        },
        warnings,
    )
}

/// The themes available: bundled ones (with user overrides from `dir`, when given) and user
/// themes with new names (over the dark defaults). Returns them with any warnings.
pub fn load_all(dir: Option<&Path>) -> (Vec<Theme>, Vec<String>) {
    let mut themes = Vec::new();
    let mut warnings = Vec::new();
    let read = |n: &str| -> Option<(String, String)> {
        let p = dir?.join(format!("{n}.toml"));
        crate::limits::read_text_bounded(&p, crate::limits::MAX_SMALL_FILE_BYTES)
            .ok()
            .map(|t| (t, p.display().to_string()))
    };
    for (name, text) in BUNDLED {
        let user = read(name);
        let (t, w) = resolve(
            name,
            text,
            user.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
        );
        themes.push(t);
        warnings.extend(w);
    }
    if let Some(d) = dir
        && let Ok(entries) = std::fs::read_dir(d)
    {
        let mut extra: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let p = e.path();
                (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
            })
            .filter(|n| !BUNDLED.iter().any(|(b, _)| b == n))
            .collect();
        extra.sort();
        for n in extra {
            if let Some((text, origin)) = read(&n) {
                let (t, w) = resolve(&n, BUNDLED[0].1, Some((&text, &origin)));
                themes.push(t);
                warnings.extend(w);
            }
        }
    }
    (themes, warnings)
}

/// The default theme (bundled dark, no overrides).
pub fn default_theme() -> Theme {
    resolve(BUNDLED[0].0, BUNDLED[0].1, None).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_themes_define_the_same_keys() {
        let (themes, warnings) = load_all(None);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(themes.len(), 3);
        // Every bundled file gives every role, and no key that is not a role.
        for (name, text) in BUNDLED {
            let mut flat = BTreeMap::new();
            flatten(&text.parse::<toml::Table>().unwrap(), "", &mut flat);
            for r in Role::ALL {
                assert!(flat.contains_key(r.key()), "{name} lacks {}", r.key());
            }
            for k in flat.keys().filter(|k| *k != "name") {
                assert!(Role::from_key(k).is_some(), "{name}: {k} is not a role");
            }
        }
        assert!(themes.iter().all(|t| t.keys().count() == Role::ALL.len()));
    }

    #[test]
    fn user_override_of_one_key_keeps_the_others() {
        let base = default_theme();
        let (t, w) = resolve(
            "dark",
            BUNDLED[0].1,
            Some(("[ui]\nfg = \"#010203\"\n", "user/dark.toml")),
        );
        assert!(w.is_empty());
        assert_eq!(t.ui_fg(), Color::Rgb(1, 2, 3));
        for r in Role::ALL.iter().filter(|r| **r != Role::UiFg) {
            assert_eq!(t.get(*r), base.get(*r), "{}", r.key());
        }
    }

    #[test]
    fn malformed_user_theme_falls_back_with_a_message() {
        let base = default_theme();
        let (t, w) = resolve("dark", BUNDLED[0].1, Some(("[ui\nfg = ", "user/dark.toml")));
        assert_eq!(t, base);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("user/dark.toml: error code=THEME line=1 message=not valid TOML"),
            "{w:?}"
        );
        let (t, w) = resolve(
            "dark",
            BUNDLED[0].1,
            Some(("[ui]\nfg = \"#zz\"\nbg = \"red\"\n", "user/dark.toml")),
        );
        assert_eq!(t.ui_fg(), base.ui_fg());
        assert_eq!(t.ui_bg(), Color::Red);
        assert_eq!(
            w[0],
            "user/dark.toml: error code=THEME key=ui.fg message=not a colour: \"#zz\" (expected #rrggbb or a colour name); kept the default"
        );
        // Every bad key is named, each in its own message, never in Rust's debug form.
        let (_, w) = resolve(
            "dark",
            BUNDLED[0].1,
            Some((
                "[ui]\nfg = \"notacolor\"\nbg = 12\nfgg = \"red\"\n",
                "user/dark.toml",
            )),
        );
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w.iter()
                .all(|m| m.starts_with("user/dark.toml: error code=THEME key="))
        );
        assert!(w.iter().all(|m| !m.contains("String(")), "{w:?}");
        assert!(
            w.iter()
                .any(|m| m.contains("key=ui.fg message=not a colour: \"notacolor\""))
        );
        assert!(
            w.iter()
                .any(|m| m.contains("key=ui.bg message=not a colour: 12 "))
        );
    }

    #[test]
    fn an_unknown_key_in_a_user_theme_is_named_and_ignored() {
        let (t, w) = resolve(
            "dark",
            BUNDLED[0].1,
            Some(("[ui]\nfgg = \"#010203\"\n", "user/dark.toml")),
        );
        assert_eq!(t, default_theme());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("ui.fgg") && w[0].contains("ignored"), "{w:?}");
    }

    #[test]
    fn user_dir_overrides_and_adds_themes() {
        let dir = std::env::temp_dir().join(format!("kestrel-theme-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("light.toml"), "[market]\nup = \"#000001\"\n").unwrap();
        std::fs::write(dir.join("mine.toml"), "[ui]\nbg = \"black\"\n").unwrap();
        std::fs::write(dir.join("broken.toml"), "= =").unwrap();
        let (themes, warnings) = load_all(Some(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        let light = themes.iter().find(|t| t.name == "light").unwrap();
        assert_eq!(light.market_up(), Color::Rgb(0, 0, 1));
        let mine = themes.iter().find(|t| t.name == "mine").unwrap();
        assert_eq!(mine.ui_bg(), Color::Black);
        assert_eq!(mine.ui_fg(), default_theme().ui_fg());
        assert!(themes.iter().any(|t| t.name == "broken"));
        assert!(warnings.iter().any(|w| w.contains("broken.toml")));
    }
}
