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

/// A resolved theme: every `section.key` as a colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// The theme's name.
    pub name: String,
    colors: BTreeMap<String, Color>,
}

impl Theme {
    /// The colour of `section.key` (the terminal's default when the key is unknown).
    pub fn c(&self, key: &str) -> Color {
        self.colors.get(key).copied().unwrap_or(Color::Reset)
    }

    /// The screen's background.
    pub fn bg(&self) -> Color {
        self.c("ui.bg")
    }

    /// Ordinary text.
    pub fn fg(&self) -> Color {
        self.c("ui.fg")
    }

    /// Secondary text (axes, hints).
    pub fn muted(&self) -> Color {
        self.c("ui.muted")
    }

    /// The selection / cursor background.
    pub fn selection(&self) -> Color {
        self.c("ui.selection_bg")
    }

    /// A candle that closed at or above its open.
    pub fn candle_up(&self) -> Color {
        self.c("market.up")
    }

    /// A candle that closed below its open.
    pub fn candle_down(&self) -> Color {
        self.c("market.down")
    }

    /// A chart level line and its label.
    pub fn level(&self, l: super::chart::Level) -> Color {
        match l {
            super::chart::Level::Vwap => self.c("market.vwap"),
            super::chart::Level::Hod => self.c("market.hod"),
            super::chart::Level::Lod => self.c("market.lod"),
        }
    }

    /// A chart mark: a fire, a buy or a sell.
    pub fn mark(&self, k: crate::session::candles::MarkKind) -> Color {
        use crate::session::candles::MarkKind;
        match k {
            MarkKind::Fire => self.c("market.fire"),
            MarkKind::Buy => self.c("market.up"),
            MarkKind::Sell => self.c("market.down"),
        }
    }

    /// The colour of a kind of event in the log.
    pub fn event(&self, k: super::log::Kind) -> Color {
        use super::log::Kind;
        match k {
            Kind::Session => self.c("ui.muted"),
            Kind::Armed | Kind::Plan => self.c("syntax.clause"),
            Kind::Fired => self.c("market.fire"),
            Kind::Order => self.c("state.info"),
            Kind::Fill => self.c("market.fill"),
            Kind::Risk | Kind::Error => self.c("state.error"),
            Kind::Mark => self.c("ui.muted"),
            Kind::Wake => self.c("syntax.series"),
            Kind::Suppressed => self.c("state.warn"),
            Kind::Frame => self.c("syntax.anchor"),
            Kind::Turn => self.c("syntax.keyword"),
            Kind::StandDown => self.c("state.warn"),
            Kind::Headline => self.c("syntax.number"),
            Kind::Other => self.c("ui.fg"),
        }
    }

    /// Every key the theme defines, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.colors.keys().map(String::as_str)
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
        Err(e) => warnings.push(format!("bundled theme {name}: {e}")),
    }
    let mut base_colors = BTreeMap::new();
    for (k, v) in &flat {
        if let Some(c) = v.as_str().and_then(parse_color) {
            base_colors.insert(k.clone(), c);
        }
    }
    let mut colors = base_colors.clone();
    if let Some((text, origin)) = user {
        match text.parse::<toml::Table>() {
            Ok(t) => {
                let mut uflat = BTreeMap::new();
                flatten(&t, "", &mut uflat);
                for (k, v) in uflat {
                    if k == "name" {
                        continue;
                    }
                    match v.as_str().and_then(parse_color) {
                        Some(c) => {
                            colors.insert(k, c);
                        }
                        None => warnings.push(format!(
                            "theme {origin}: {k} = {v:?} is not a colour (write \"#rrggbb\" or a colour name); kept the default"
                        )),
                    }
                }
            }
            Err(e) => warnings.push(format!(
                "theme {origin} is not valid TOML ({}); using the bundled {name} theme",
                e.message().trim()
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
        std::fs::read_to_string(&p)
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
        let keys: Vec<&str> = themes[0].keys().collect();
        assert!(keys.contains(&"ui.bg") && keys.contains(&"syntax.keyword"));
        for t in &themes {
            assert_eq!(t.keys().collect::<Vec<_>>(), keys, "{}", t.name);
        }
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
        assert_eq!(t.c("ui.fg"), Color::Rgb(1, 2, 3));
        for k in base.keys().filter(|k| *k != "ui.fg") {
            assert_eq!(t.c(k), base.c(k), "{k}");
        }
    }

    #[test]
    fn malformed_user_theme_falls_back_with_a_message() {
        let base = default_theme();
        let (t, w) = resolve("dark", BUNDLED[0].1, Some(("[ui\nfg = ", "user/dark.toml")));
        assert_eq!(t, base);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("user/dark.toml is not valid TOML"), "{w:?}");
        let (t, w) = resolve(
            "dark",
            BUNDLED[0].1,
            Some(("[ui]\nfg = \"#zz\"\nbg = \"red\"\n", "user/dark.toml")),
        );
        assert_eq!(t.c("ui.fg"), base.c("ui.fg"));
        assert_eq!(t.c("ui.bg"), Color::Red);
        assert!(
            w[0].contains("ui.fg") && w[0].contains("not a colour"),
            "{w:?}"
        );
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
        assert_eq!(light.c("market.up"), Color::Rgb(0, 0, 1));
        let mine = themes.iter().find(|t| t.name == "mine").unwrap();
        assert_eq!(mine.c("ui.bg"), Color::Black);
        assert_eq!(mine.c("ui.fg"), default_theme().c("ui.fg"));
        assert!(themes.iter().any(|t| t.name == "broken"));
        assert!(warnings.iter().any(|w| w.contains("broken.toml")));
    }
}
