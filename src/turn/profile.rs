//! Prompt profiles and config identity (TURNS.md §5).
//!
//! A profile is versioned prompt text (a file under `src/turn/profiles/`, compiled in) plus
//! the menu it offers. Its bytes hash to a `prompt_hash`; the tuple (profile, prompt_hash,
//! model, decode constraint on/off, temperature) hashes to a `config_id`. Results from
//! different config ids are never averaged. The profile files are frozen once published: a
//! change is a new profile name (a new grid column), never an edit.

use serde::{Deserialize, Serialize};

/// A prompt profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Pure Kestrel, the default.
    AuthoringV2,
    /// `authoring-v2` plus SHOW VIEW at the OPEN wake (the view-shop).
    ViewshopV2,
    /// The JSON envelope, kept byte-frozen as the A/B control.
    AuthoringV1,
    /// Pure Kestrel for *base* (pretrained, not instruction-tuned) models: a few-shot
    /// document of whole turns, no chat roles; the model continues an open `### Reply`.
    CompletionV1,
}

/// What wire shape a profile teaches (every profile *accepts* both; see `envelope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wire {
    /// The whole reply is a Kestrel document.
    Kestrel,
    /// The reply is one JSON envelope object wrapping a Kestrel string.
    JsonEnvelope,
}

impl Profile {
    /// Every profile, default first.
    pub const ALL: &'static [Profile] = &[
        Profile::AuthoringV2,
        Profile::ViewshopV2,
        Profile::AuthoringV1,
        Profile::CompletionV1,
    ];

    /// The profile's stable name (`authoring-v2`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Profile::AuthoringV2 => "authoring-v2",
            Profile::ViewshopV2 => "viewshop-v2",
            Profile::AuthoringV1 => "authoring-v1",
            Profile::CompletionV1 => "completion-v1",
        }
    }

    /// Look a profile up by name.
    pub fn from_name(s: &str) -> Option<Profile> {
        Profile::ALL.iter().copied().find(|p| p.name() == s)
    }

    /// The versioned prompt text, byte for byte.
    pub fn prompt(self) -> &'static str {
        match self {
            Profile::AuthoringV2 => include_str!("profiles/authoring-v2.txt"),
            Profile::ViewshopV2 => include_str!("profiles/viewshop-v2.txt"),
            Profile::AuthoringV1 => include_str!("profiles/authoring-v1.txt"),
            Profile::CompletionV1 => include_str!("profiles/completion-v1.txt"),
        }
    }

    /// blake3 of the prompt bytes, hex.
    pub fn prompt_hash(self) -> String {
        blake3::hash(self.prompt().as_bytes()).to_hex().to_string()
    }

    /// The prompt with the menu and the language card interpolated (`{{menu}}`, `{{card}}`).
    /// The hash is of the template, which is what is versioned.
    pub fn render(self, menu: &str, card: &str) -> String {
        self.prompt()
            .replace("{{menu}}", menu.trim_end())
            .replace("{{card}}", card.trim_end())
    }

    /// The wire shape the profile teaches.
    pub fn wire(self) -> Wire {
        match self {
            Profile::AuthoringV1 => Wire::JsonEnvelope,
            _ => Wire::Kestrel,
        }
    }

    /// Is the profile a document a base model continues (no chat roles)? An
    /// OpenAI-compatible author sends it to `/completions` (see `author::Prompt`).
    pub fn completion_style(self) -> bool {
        matches!(self, Profile::CompletionV1)
    }

    /// The replies of the profile's few-shot examples (the text under each `### Reply`),
    /// empty for a profile without examples.
    pub fn example_replies(self) -> Vec<&'static str> {
        let text = self.prompt();
        text.split("\n### Reply\n")
            .skip(1)
            .map(|r| r.split("\n### ").next().unwrap_or(r).trim_end_matches('\n'))
            .collect()
    }

    /// Does the profile offer SHOW VIEW at the OPEN wake?
    pub fn view_shop(self) -> bool {
        matches!(self, Profile::ViewshopV2)
    }

    /// How many SHOW VIEW requests one wake may make (0 where the view-shop is off).
    pub fn view_request_cap(self) -> u32 {
        if self.view_shop() { 2 } else { 0 }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The identity of one authoring configuration (one grid column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The prompt profile.
    pub profile: Profile,
    /// The model's name as the provider spells it.
    pub model: String,
    /// Is grammar-constrained decoding on?
    pub constrained: bool,
    /// Sampling temperature.
    pub temperature: f64,
}

impl Config {
    /// The canonical text hashed into the config id: a JSON object with sorted keys and the
    /// temperature printed in its shortest round-trip form.
    pub fn canonical(&self) -> String {
        let v = serde_json::json!({
            "constrained": self.constrained,
            "model": self.model,
            "profile": self.profile.name(),
            "prompt_hash": self.profile.prompt_hash(),
            "temperature": format!("{}", self.temperature),
        });
        // serde_json's map is ordered by key (no `preserve_order`), so this is canonical.
        v.to_string()
    }

    /// blake3 of [`Config::canonical`], hex.
    pub fn config_id(&self) -> String {
        blake3::hash(self.canonical().as_bytes())
            .to_hex()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_hashes_differ() {
        for p in Profile::ALL {
            assert_eq!(Profile::from_name(p.name()), Some(*p));
            assert_eq!(p.prompt_hash().len(), 64);
        }
        assert_ne!(
            Profile::AuthoringV2.prompt_hash(),
            Profile::ViewshopV2.prompt_hash()
        );
    }

    #[test]
    fn config_id_moves_with_each_axis() {
        let base = Config {
            profile: Profile::AuthoringV2,
            model: "m".into(),
            constrained: false,
            temperature: 0.0,
        };
        let mut ids = std::collections::BTreeSet::new();
        ids.insert(base.config_id());
        let mut c = base.clone();
        c.constrained = true;
        ids.insert(c.config_id());
        let mut c = base.clone();
        c.temperature = 1.0;
        ids.insert(c.config_id());
        let mut c = base.clone();
        c.model = "n".into();
        ids.insert(c.config_id());
        let mut c = base.clone();
        c.profile = Profile::AuthoringV1;
        ids.insert(c.config_id());
        assert_eq!(ids.len(), 5);
        assert_eq!(base.config_id(), base.clone().config_id());
    }
}
