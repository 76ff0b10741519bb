//! Tapes and the market model.
