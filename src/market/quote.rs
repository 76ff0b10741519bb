//! Quotes on a tape (format v2): the `quote` event's types and the OCC option symbology it
//! names option contracts with.
//!
//! An OCC symbol is `ROOT YYMMDD C|P STRIKE`: the root (1 to 6 characters, padded with
//! spaces to 6 in the 21-character OSI form), the expiry's two-digit year, month and day,
//! `C` or `P`, and the strike times 1000 in 8 digits (`SPY250409C00500000` is the SPY
//! 2025-04-09 500 call). Both the padded and the compact form are read; the compact form is
//! written. See docs/tapes.md.

use std::fmt;

use super::options::Right;
use super::types::{Date, Px, Sym};

/// One option contract named on a tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OptionKey {
    /// The underlying (a header symbol with a `strike_step`).
    pub root: Sym,
    /// Expiry date.
    pub expiry: Date,
    /// Call or put.
    pub right: Right,
    /// Strike.
    pub strike: Px,
}

impl OptionKey {
    /// A total order key (expiry day number, right, strike) for sorted lookups.
    pub(crate) fn order(&self) -> (i64, u8, i64) {
        (
            self.expiry.days(),
            u8::from(self.right == Right::Put),
            self.strike.raw(),
        )
    }
}

/// Why an OCC symbol was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OccError {
    /// Not of the OCC shape at all.
    Shape,
    /// The root is not a valid symbol.
    Root,
    /// The expiry is not a calendar date.
    Date,
    /// The strike is zero.
    Strike,
}

impl fmt::Display for OccError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OccError::Shape => "is not an OCC option symbol (ROOT YYMMDD C|P 8-digit strike)",
            OccError::Root => "has an OCC root that is not a valid symbol",
            OccError::Date => "has an OCC expiry that is not a calendar date",
            OccError::Strike => "has a zero OCC strike",
        })
    }
}

/// Does this text look like an OCC option symbol (so a `sym` that is not a header symbol
/// is read as one)? The last 15 bytes are `YYMMDD`, `C`/`P` and 8 digits.
pub fn looks_occ(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 16
        && b.len() <= 21
        && b[b.len() - 15..b.len() - 9].iter().all(u8::is_ascii_digit)
        && matches!(b[b.len() - 9], b'C' | b'P')
        && b[b.len() - 8..].iter().all(u8::is_ascii_digit)
}

/// Parse an OCC symbol, padded (`SPY   250409C00500000`) or compact (`SPY250409C00500000`).
/// Years are 20YY.
pub fn parse_occ(s: &str) -> Result<OptionKey, OccError> {
    if !looks_occ(s) {
        return Err(OccError::Shape);
    }
    let b = s.as_bytes();
    let n = b.len();
    let root_s = s[..n - 15].trim_end_matches(' ');
    if root_s.is_empty() || root_s.len() > 6 {
        return Err(OccError::Shape);
    }
    let root = Sym::new(root_s).ok_or(OccError::Root)?;
    let num = |r: std::ops::Range<usize>| -> u32 {
        b[r].iter().fold(0u32, |v, &c| v * 10 + u32::from(c - b'0'))
    };
    let expiry = Date::new(
        2000 + num(n - 15..n - 13) as i32,
        num(n - 13..n - 11),
        num(n - 11..n - 9),
    )
    .ok_or(OccError::Date)?;
    let right = if b[n - 9] == b'C' {
        Right::Call
    } else {
        Right::Put
    };
    // Strike × 1000 in 8 digits; Px is ten-thousandths, so × 10.
    let milli = b[n - 8..]
        .iter()
        .fold(0i64, |v, &c| v * 10 + i64::from(c - b'0'));
    if milli == 0 {
        return Err(OccError::Strike);
    }
    Ok(OptionKey {
        root,
        expiry,
        right,
        strike: Px::from_raw(milli * 10),
    })
}

/// The compact OCC symbol of a contract, or `None` when it has none (a strike with a 4th
/// decimal, a strike of 100,000 or more, a year outside 2000..=2099, a root longer than 6).
pub fn occ_symbol(k: &OptionKey) -> Option<String> {
    let raw = k.strike.raw();
    if raw <= 0 || raw % 10 != 0 || raw / 10 > 99_999_999 {
        return None;
    }
    if !(2000..=2099).contains(&k.expiry.y) || k.root.as_str().len() > 6 {
        return None;
    }
    let r = if k.right == Right::Call { 'C' } else { 'P' };
    Some(format!(
        "{}{:02}{:02}{:02}{r}{:08}",
        k.root,
        k.expiry.y - 2000,
        k.expiry.m,
        k.expiry.d,
        raw / 10
    ))
}

/// What a quote is for: a header symbol's shares (or index), or one option contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuoteInst {
    /// A header symbol.
    Sym(Sym),
    /// An option on a header symbol with a chain.
    Option(OptionKey),
}

impl QuoteInst {
    /// The header symbol it belongs to (the underlying of an option).
    pub fn sym(&self) -> Sym {
        match self {
            QuoteInst::Sym(s) => *s,
            QuoteInst::Option(k) => k.root,
        }
    }
}

/// A top-of-book quote (`{"type":"quote",...}`, format v2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeQuote {
    /// Time of the quote.
    pub ts: super::types::Ts,
    /// What it quotes.
    pub inst: QuoteInst,
    /// Best bid (positive for a symbol; an option's may be 0: no bid).
    pub bid: Px,
    /// Best ask (positive, at least the bid).
    pub ask: Px,
    /// Size at the bid.
    pub bid_sz: u64,
    /// Size at the ask.
    pub ask_sz: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occ_roundtrip_padded_and_compact() {
        let k = parse_occ("SPY   250409C00500000").unwrap();
        assert_eq!(k.root.as_str(), "SPY");
        assert_eq!(k.expiry, Date::new(2025, 4, 9).unwrap());
        assert_eq!(k.right, Right::Call);
        assert_eq!(k.strike, Px::from_cents(50_000));
        assert_eq!(parse_occ("SPY250409C00500000"), Ok(k));
        assert_eq!(occ_symbol(&k).as_deref(), Some("SPY250409C00500000"));
        let p = parse_occ("SPXW251219P04825500").unwrap();
        assert_eq!(p.strike, Px::from_raw(48_255_000));
        assert_eq!(occ_symbol(&p).as_deref(), Some("SPXW251219P04825500"));
    }

    #[test]
    fn occ_refusals() {
        assert_eq!(parse_occ("SPY"), Err(OccError::Shape));
        assert_eq!(parse_occ("SPY250409X00500000"), Err(OccError::Shape));
        assert_eq!(parse_occ("SPY251309C00500000"), Err(OccError::Date));
        assert_eq!(parse_occ("SPY250409C00000000"), Err(OccError::Strike));
        assert_eq!(parse_occ("spy250409C00500000"), Err(OccError::Root));
        assert_eq!(parse_occ("TOOLONGX250409C00500000"), Err(OccError::Shape));
    }
}
