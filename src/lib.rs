//! Kestrel desk: a terminal desk where a person and an LLM agent fly one trading book
//! together on a replayed market tape.
//!
//! The crate is organised one folder per concern, with data flowing one way:
//! `lang` (the Kestrel language) → `market` (tapes and the market model) → `engine`
//! (the tick engine) → `bus` (the event log, Blotter and determinism hash) → `cli`.

pub mod author;
pub mod bus;
pub mod cli;
pub mod desk;
pub mod engine;
pub mod grade;
pub mod lang;
pub mod limits;
pub mod market;
pub mod mcp;
pub mod session;
pub(crate) mod signals;
pub mod tokens;
pub mod turn;
pub mod view;
