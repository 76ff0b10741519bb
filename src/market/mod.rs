//! Tapes and the market model.
//!
//! - [`types`]: exact value types ([`Px`], [`Ts`], [`Date`], [`Sym`]).
//! - [`generator`]: the seeded synthetic session generator.
//! - [`import`]: CSV and DBN files into v2 tapes (`kestrel tape import`).
//! - [`options`]: Black-Scholes, the smile, the spread model and the open-interest model.
//! - [`quote`]: the v2 `quote` event and OCC option symbols.
//! - [`state`]: [`MarketState`], the per-tape market model (series, percentiles, chain).
//! - [`tape`]: the JSON Lines tape format, the streaming [`TapeReader`] and the canonical writer.
//!
//! Everything here is deterministic: the same inputs give the same bytes on any machine.

mod cents;
pub mod generator;
pub mod import;
pub mod options;
pub mod quote;
pub mod state;
pub mod tape;
pub mod types;

pub use cents::{PctBound, RankHint};
pub use generator::{
    DEFAULT_DATE, EDGE_SECS, FamilyMember, GenOptions, Generator, Regime, generate,
    generate_family, generate_with, tape_name, write_generated,
};
pub use options::{BookQuote, Expiry, MoneyMemo, Quote, Right, ShareQuote, Smile};
pub use quote::{OptionKey, QuoteInst, TapeQuote, occ_symbol, parse_occ};
pub use state::{MIN_PERCENTILE_SAMPLES, MarketState, Series};
pub use tape::{
    Headline, IvChange, SessionSpec, SymbolSpec, TapeError, TapeErrorKind, TapeEvent, TapeHeader,
    TapeReader, Tick, VolSpec, check_tape, open_tape, read_tape_bytes, read_tape_file, write_event,
    write_tape,
};
pub use types::{Date, Px, Sym, Ts};
