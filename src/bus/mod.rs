//! The event Bus (placeholder until the engine lands).
