//! The Kestrel language: syntax (winnow), the typed model, the canonical printer, the
//! fail-closed rules and the error format.

pub mod ast;
