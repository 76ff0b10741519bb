//! The tick engine (placeholder until the engine lands).
