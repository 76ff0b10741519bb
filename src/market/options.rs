//! Option pricing for the synthetic chain: Black-Scholes with a linear smile, the spread
//! model (a synthetic book on the tick grid), and a deterministic open-interest model.
//!
//! All transcendental math goes through `libm`, so results are bit-identical across
//! platforms.

use super::types::{Date, Px};

/// Contract multiplier of an option.
pub const MULTIPLIER: f64 = 100.0;
/// Floor on implied volatility after the smile is applied.
pub const MIN_IV: f64 = 0.01;
/// Floor on time to expiry, in years (60 seconds of a 365-day year).
pub const MIN_T_YEARS: f64 = 60.0 / (365.0 * 86_400.0);
/// Price level at and above which options trade in 0.05 increments (0.01 below).
pub const TICK_BREAK: Px = Px::from_cents(300);
/// Spread model: the book is `max(MIN_WIDTH, SPREAD_FRAC * fair)` wide around fair.
pub const SPREAD_FRAC: f64 = 0.03;
/// Spread model: minimum total width (one cent).
pub const MIN_WIDTH: f64 = 0.01;

/// Call or put.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Right {
    /// A call.
    Call,
    /// A put.
    Put,
}

/// An expiry, as the language writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expiry {
    /// Expires at today's close.
    ZeroDte,
    /// Expires at the next weekday's close (exchange holidays are not modelled).
    OneDte,
    /// Expires at that date's close.
    Date(Date),
}

impl Expiry {
    /// The expiry date for a session on `today`; `None` if a dated expiry is in the past.
    pub fn resolve(self, today: Date) -> Option<Date> {
        match self {
            Expiry::ZeroDte => Some(today),
            Expiry::OneDte => today.next_weekday(),
            Expiry::Date(d) => (d >= today).then_some(d),
        }
    }
}

/// Volatility smile parameters of a symbol (see [`smile_iv`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Smile {
    /// At-the-money implied volatility.
    pub atm_iv: f64,
    /// Slope per unit of log-moneyness `ln(K/S)`.
    pub skew: f64,
}

/// Standard normal CDF, `N(x) = erfc(-x/√2)/2`.
pub fn norm_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal density.
pub fn norm_pdf(x: f64) -> f64 {
    libm::exp(-0.5 * x * x) / libm::sqrt(2.0 * std::f64::consts::PI)
}

/// Black-Scholes output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bs {
    /// Model price.
    pub price: f64,
    /// dV/dS.
    pub delta: f64,
    /// d²V/dS².
    pub gamma: f64,
}

/// Black-Scholes (no dividends) for spot `s`, strike `k`, time `t` in years, rate `r` and
/// volatility `sigma`. With `t <= 0` or `sigma <= 0` it returns the (discounted-forward)
/// intrinsic value with a step delta and zero gamma. Non-finite inputs give `None`.
pub fn black_scholes(right: Right, s: f64, k: f64, t: f64, r: f64, sigma: f64) -> Option<Bs> {
    bs_core(right, s, k, || libm::log(s / k), t, r, sigma, true)
}

/// The Black-Scholes value alone: bit for bit [`black_scholes`]'s `price` (the same code,
/// with the greeks left out).
pub fn black_scholes_price(
    right: Right,
    s: f64,
    k: f64,
    t: f64,
    r: f64,
    sigma: f64,
) -> Option<f64> {
    bs_core(right, s, k, || libm::log(s / k), t, r, sigma, false).map(|b| b.price)
}

/// Black-Scholes; with `greeks` false, `delta` and `gamma` are NaN and not computed.
/// `ln_s_k` gives `ln(S/K)` as `libm::log(s / k)` (called only past the checks; a
/// [`MoneyMemo`] gives the same bits from memory).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn bs_core(
    right: Right,
    s: f64,
    k: f64,
    ln_s_k: impl FnOnce() -> f64,
    t: f64,
    r: f64,
    sigma: f64,
    greeks: bool,
) -> Option<Bs> {
    if !(s.is_finite() && k.is_finite() && t.is_finite() && r.is_finite() && sigma.is_finite())
        || s <= 0.0
        || k <= 0.0
    {
        return None;
    }
    let df = libm::exp(-r * t.max(0.0));
    if t <= 0.0 || sigma <= 0.0 {
        let fwd_intr = match right {
            Right::Call => (s - k * df).max(0.0),
            Right::Put => (k * df - s).max(0.0),
        };
        let delta = match right {
            Right::Call if s > k * df => 1.0,
            Right::Put if s < k * df => -1.0,
            _ => 0.0,
        };
        return Some(Bs {
            price: fwd_intr,
            delta,
            gamma: 0.0,
        });
    }
    let sqrt_t = libm::sqrt(t);
    let d1 = (ln_s_k() + (r + 0.5 * sigma * sigma) * t) / (sigma * sqrt_t);
    let d2 = d1 - sigma * sqrt_t;
    let gamma = if greeks {
        norm_pdf(d1) / (s * sigma * sqrt_t)
    } else {
        f64::NAN
    };
    let (price, delta) = match right {
        Right::Call => {
            let n1 = norm_cdf(d1);
            (s * n1 - k * df * norm_cdf(d2), n1)
        }
        Right::Put => (
            k * df * norm_cdf(-d2) - s * norm_cdf(-d1),
            if greeks { norm_cdf(d1) - 1.0 } else { f64::NAN },
        ),
    };
    Some(Bs {
        price: price.max(0.0),
        delta,
        gamma,
    })
}

/// The smile: `iv(K) = max(MIN_IV, atm_iv + skew * ln(K / S))` (log-moneyness against spot).
pub fn smile_iv(atm_iv: f64, skew: f64, spot: f64, strike: f64) -> f64 {
    smile_iv_at(atm_iv, skew, log_moneyness(spot, strike))
}

/// `ln(K/S)` as [`smile_iv`] takes it (0 unless both are positive).
fn log_moneyness(spot: f64, strike: f64) -> f64 {
    if spot > 0.0 && strike > 0.0 {
        libm::log(strike / spot)
    } else {
        0.0
    }
}

/// [`smile_iv`] at the log-moneyness `lm` ([`log_moneyness`]).
fn smile_iv_at(atm_iv: f64, skew: f64, lm: f64) -> f64 {
    let iv = atm_iv + skew * lm;
    if iv.is_finite() {
        iv.max(MIN_IV)
    } else {
        MIN_IV
    }
}

/// An option instrument as a trader names it on the session's own date: `SPY 2025-04-09 518.00 C`
/// on 2025-04-09 reads `SPY 0dte 518.00 C` (any other instrument is returned as it is). The
/// Blotter's rows and the stand-down's "what rides" line both show it so.
pub fn same_day_name(instrument: &str, date: &str) -> String {
    instrument.replacen(&format!(" {date} "), " 0dte ", 1)
}

/// The option price increment at a price level: 0.01 below 3.00, 0.05 at or above.
pub fn option_tick(level: f64) -> Px {
    if level < TICK_BREAK.to_f64() {
        Px::CENT
    } else {
        Px::from_cents(5)
    }
}

/// Intrinsic value from exact spot and strike: `max(0, S-K)` for calls, `max(0, K-S)` for puts.
pub fn intrinsic(right: Right, spot: Px, strike: Px) -> Px {
    let v = match right {
        Right::Call => spot - strike,
        Right::Put => strike - spot,
    };
    v.max(Px::ZERO)
}

/// The synthetic book around `fair`: total width `w = max(0.01, 3% of fair)`;
/// `bid = floor_tick(fair - w/2)` (never below 0), `ask = ceil_tick(fair + w/2)` (at least
/// one tick above the bid), each on the tick grid of its own price level ([`option_tick`]).
#[inline]
pub fn option_book(fair: f64) -> (Px, Px) {
    let fair = if fair.is_finite() { fair.max(0.0) } else { 0.0 };
    let w = (SPREAD_FRAC * fair).max(MIN_WIDTH);
    let b = fair - w / 2.0;
    let bid = if b <= 0.0 {
        Px::ZERO
    } else {
        Px::floor_to(b, option_tick(b))
            .unwrap_or(Px::ZERO)
            .max(Px::ZERO)
    };
    let a = fair + w / 2.0;
    let mut ask = Px::ceil_to(a, option_tick(a)).unwrap_or(Px::CENT);
    if ask <= bid {
        ask = bid + option_tick(bid.to_f64());
    }
    (bid, ask.max(Px::CENT))
}

/// Which family an expiry belongs to for the open-interest model.
fn expiry_oi_factor(e: Expiry) -> f64 {
    match e {
        Expiry::ZeroDte => 1.0,
        Expiry::OneDte => 0.7,
        Expiry::Date(_) => 0.5,
    }
}

/// Deterministic open-interest model (contracts), from the strike's distance to a fixed
/// reference (the symbol's prior close, so it does not move intraday):
///
/// `oi = round(20000 · exp(-½ (ln(K/ref)/0.03)²) · round_bonus · side · expiry_factor)`
///
/// where `round_bonus` is 2.5 on strikes that are multiples of 10 grid steps, 1.8 on
/// multiples of 5, else 1; `side` is 1 out of the money (calls at or above ref, puts at or
/// below) and 0.5 in the money; `expiry_factor` is 1 (0dte), 0.7 (1dte), 0.5 (dated).
pub fn open_interest(expiry: Expiry, right: Right, strike: Px, reference: Px, step: Px) -> u64 {
    if strike.raw() <= 0 || reference.raw() <= 0 || step.raw() <= 0 {
        return 0;
    }
    let m = libm::log(strike.to_f64() / reference.to_f64()) / 0.03;
    let base = 20_000.0 * libm::exp(-0.5 * m * m);
    let n = strike.raw() / step.raw();
    let on_grid = strike.raw() % step.raw() == 0;
    let bonus = if on_grid && n % 10 == 0 {
        2.5
    } else if on_grid && n % 5 == 0 {
        1.8
    } else {
        1.0
    };
    let otm = match right {
        Right::Call => strike >= reference,
        Right::Put => strike <= reference,
    };
    let side = if otm { 1.0 } else { 0.5 };
    let oi = libm::round(base * bonus * side * expiry_oi_factor(expiry));
    if oi.is_finite() && oi > 0.0 {
        oi as u64
    } else {
        0
    }
}

/// A priced option contract.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quote {
    /// Black-Scholes value from spot, time to expiry, smile iv and rate (unrounded).
    pub fair: f64,
    /// Synthetic bid (tick grid, ≥ 0).
    pub bid: Px,
    /// Synthetic ask (tick grid, > bid).
    pub ask: Px,
    /// `(bid + ask) / 2`, exact.
    pub mid: Px,
    /// No option prints on the tape: `last` is fair rounded to its tick grid, clamped into
    /// `[bid, ask]`.
    pub last: Px,
    /// `max(0, S-K)` / `max(0, K-S)` from the exact spot.
    pub intrinsic: Px,
    /// Black-Scholes delta.
    pub delta: f64,
    /// Black-Scholes gamma (per 1.00 of underlying).
    pub gamma: f64,
    /// The smile iv used.
    pub iv: f64,
    /// Time to expiry used, in years (floored at [`MIN_T_YEARS`]).
    pub t_years: f64,
    /// Modelled open interest (contracts).
    pub open_interest: u64,
    /// The book (bid, ask, mid, last, fair) is a quote from the tape, not the spread model
    /// (the greeks, iv and open interest stay the model's).
    pub quoted: bool,
}

/// An option's book without greeks: what an order needs (see [`book_quote`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BookQuote {
    /// As [`Quote::fair`].
    pub fair: f64,
    /// As [`Quote::bid`].
    pub bid: Px,
    /// As [`Quote::ask`].
    pub ask: Px,
    /// As [`Quote::mid`].
    pub mid: Px,
    /// As [`Quote::last`].
    pub last: Px,
    /// As [`Quote::intrinsic`].
    pub intrinsic: Px,
    /// As [`Quote::quoted`].
    pub quoted: bool,
}

impl BookQuote {
    /// This book with its bid and ask replaced by a tape quote: `mid` is their exact middle,
    /// `fair` and `last` are the mid (there are no option prints on a tape).
    pub fn with_tape_book(self, bid: Px, ask: Px) -> BookQuote {
        let mid = Px((bid.raw() + ask.raw()) / 2);
        BookQuote {
            fair: mid.to_f64(),
            bid,
            ask,
            mid,
            last: mid,
            intrinsic: self.intrinsic,
            quoted: true,
        }
    }
}

impl Quote {
    /// [`BookQuote::with_tape_book`] for a full quote (greeks kept).
    pub fn with_tape_book(self, bid: Px, ask: Px) -> Quote {
        let mid = Px((bid.raw() + ask.raw()) / 2);
        Quote {
            fair: mid.to_f64(),
            bid,
            ask,
            mid,
            last: mid,
            quoted: true,
            ..self
        }
    }
}

/// A share quote: fair is the last trade; the book is the tape's latest quote when the
/// tape has one, else one cent either side of the last trade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareQuote {
    /// Last trade.
    pub fair: Px,
    /// `last - 0.01` (at least 0.01).
    pub bid: Px,
    /// `last + 0.01`.
    pub ask: Px,
    /// `(bid + ask) / 2` (equals last unless the bid was floored).
    pub mid: Px,
    /// Last trade.
    pub last: Px,
    /// The bid and ask are the tape's latest quote (not last ± 0.01).
    pub quoted: bool,
}

impl ShareQuote {
    /// The book of the tape's latest quote; `last` is the last trade (the quote's mid
    /// before any trade).
    pub fn from_book(last: Option<Px>, bid: Px, ask: Px) -> ShareQuote {
        let mid = Px((bid.raw() + ask.raw()) / 2);
        let last = last.unwrap_or(mid);
        ShareQuote {
            fair: last,
            bid,
            ask,
            mid,
            last,
            quoted: true,
        }
    }

    /// The share book around a last trade.
    pub fn from_last(last: Px) -> ShareQuote {
        let bid = (last - Px::CENT).max(Px::CENT);
        let ask = last + Px::CENT;
        ShareQuote {
            fair: last,
            bid,
            ask,
            mid: Px((bid.raw() + ask.raw()) / 2),
            last,
            quoted: false,
        }
    }
}

/// The time (floored at [`MIN_T_YEARS`]; `None` when not finite), spot, strike and the
/// smile's vol for one contract.
fn contract_inputs(
    spot: Px,
    strike: Px,
    t_years: f64,
    smile: Smile,
) -> Option<(f64, f64, f64, f64)> {
    let (t, s, k) = contract_time_prices(spot, strike, t_years)?;
    Some((t, s, k, smile_iv(smile.atm_iv, smile.skew, s, k)))
}

/// [`contract_inputs`] before the smile: the time (floored; `None` when not finite), spot
/// and strike as `f64`.
fn contract_time_prices(spot: Px, strike: Px, t_years: f64) -> Option<(f64, f64, f64)> {
    if !t_years.is_finite() {
        return None;
    }
    Some((t_years.max(MIN_T_YEARS), spot.to_f64(), strike.to_f64()))
}

/// The two logs of moneyness a quote takes at one spot and strike, each as the unmemoised
/// code computes it: `ln(K/S)` for the smile ([`smile_iv`]) and `ln(S/K)` for
/// Black-Scholes' `d1`.
#[derive(Clone, Copy, Debug)]
struct Logs {
    /// The spot and strike they are of (`strike` 0: an empty slot; a listed strike is > 0).
    spot: i64,
    strike: i64,
    k_s: f64,
    s_k: f64,
}

/// Slots of a [`MoneyMemo`] (a power of two, at least 2).
const MEMO_SLOTS: usize = 64;

/// The slot of (spot, strike) by Fibonacci hashing: spots a cent apart land apart.
fn memo_slot(spot: i64, strike: i64) -> usize {
    let h = (spot as u64 ^ (strike as u64).rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - MEMO_SLOTS.trailing_zeros())) as usize
}

/// A contract's recent moneyness logs by spot, direct-mapped on a hash of the spot: the
/// engine re-prices a resting option at every trade of its symbol, and a price comes back
/// to the cents it traded at a moment ago (81–89% of the bundled tapes' SPY trades find
/// their spot among the previous 64 slots), so most re-pricings take both logs from here.
/// The values are the bits [`book_quote`] computes: a memo changes the cost, never a quote.
#[derive(Debug, Clone)]
pub struct MoneyMemo {
    slots: Box<[Logs; MEMO_SLOTS]>,
}

impl Default for MoneyMemo {
    fn default() -> MoneyMemo {
        let empty = Logs {
            spot: 0,
            strike: 0,
            k_s: 0.0,
            s_k: 0.0,
        };
        MoneyMemo {
            slots: Box::new([empty; MEMO_SLOTS]),
        }
    }
}

impl MoneyMemo {
    /// The logs of (`spot`, `strike`), from the memo or computed (and kept).
    fn logs(&mut self, spot: Px, strike: Px) -> (f64, f64) {
        let (sr, kr) = (spot.raw(), strike.raw());
        let slot = &mut self.slots[memo_slot(sr, kr)];
        if slot.spot != sr || slot.strike != kr || kr == 0 {
            let (s, k) = (spot.to_f64(), strike.to_f64());
            *slot = Logs {
                spot: sr,
                strike: kr,
                k_s: log_moneyness(s, k),
                s_k: libm::log(s / k),
            };
        }
        (slot.k_s, slot.s_k)
    }
}

/// The book of a contract whose fair value is `price`.
#[inline]
fn book_at(right: Right, spot: Px, strike: Px, price: f64) -> BookQuote {
    let (bid, ask) = option_book(price);
    let last = Px::round_to(price, option_tick(price))
        .unwrap_or(bid)
        .clamp(bid, ask);
    BookQuote {
        fair: price,
        bid,
        ask,
        mid: Px((bid.raw() + ask.raw()) / 2),
        last,
        intrinsic: intrinsic(right, spot, strike),
        quoted: false,
    }
}

/// Price one contract: `spot` (exact), `strike`, `t_years` (floored at [`MIN_T_YEARS`]), rate,
/// the smile, and the contract's open interest.
pub fn price_option(
    right: Right,
    spot: Px,
    strike: Px,
    t_years: f64,
    rate: f64,
    smile: Smile,
    open_interest: u64,
) -> Option<Quote> {
    let (t, s, k, iv) = contract_inputs(spot, strike, t_years, smile)?;
    let bs = black_scholes(right, s, k, t, rate, iv)?;
    let b = book_at(right, spot, strike, bs.price);
    Some(Quote {
        fair: b.fair,
        bid: b.bid,
        ask: b.ask,
        mid: b.mid,
        last: b.last,
        intrinsic: b.intrinsic,
        delta: bs.delta,
        gamma: bs.gamma,
        iv,
        t_years: t,
        open_interest,
        quoted: false,
    })
}

/// [`price_option`]'s book fields alone (no greeks, no open interest): the same values,
/// computed by the same code, for the engine's per-tick re-pricing of resting orders.
pub fn book_quote(
    right: Right,
    spot: Px,
    strike: Px,
    t_years: f64,
    rate: f64,
    smile: Smile,
) -> Option<BookQuote> {
    let (t, s, k, iv) = contract_inputs(spot, strike, t_years, smile)?;
    let price = black_scholes_price(right, s, k, t, rate, iv)?;
    Some(book_at(right, spot, strike, price))
}

/// [`book_quote`] with the moneyness logs taken from (and kept in) `memo`: the same bits.
#[inline]
pub fn book_quote_memo(
    right: Right,
    spot: Px,
    strike: Px,
    t_years: f64,
    rate: f64,
    smile: Smile,
    memo: &mut MoneyMemo,
) -> Option<BookQuote> {
    let (t, s, k) = contract_time_prices(spot, strike, t_years)?;
    let (k_s, s_k) = memo.logs(spot, strike);
    let iv = smile_iv_at(smile.atm_iv, smile.skew, k_s);
    let price = bs_core(right, s, k, || s_k, t, rate, iv, false)?.price;
    Some(book_at(right, spot, strike, price))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The book-only quote is bit for bit the full quote's book.
        #[test]
        fn book_quote_matches_price_option(
            put in any::<bool>(),
            spot in 1i64..20_000_000,
            strike_steps in 1i64..2_000,
            t in prop_oneof![Just(0.0), Just(-1.0), Just(f64::NAN), 0.0f64..0.02, 0.0f64..2.0],
            rate in -0.05f64..0.1,
            atm_iv in prop_oneof![Just(0.0), 0.01f64..3.0],
            skew in -3.0f64..1.0,
        ) {
            let right = if put { Right::Put } else { Right::Call };
            let (spot, strike) = (Px(spot), Px(strike_steps * 10_000));
            let smile = Smile { atm_iv, skew };
            let full = price_option(right, spot, strike, t, rate, smile, 7);
            let book = book_quote(right, spot, strike, t, rate, smile);
            prop_assert_eq!(full.is_some(), book.is_some());
            if let (Some(f), Some(b)) = (full, book) {
                prop_assert_eq!(f.fair.to_bits(), b.fair.to_bits());
                prop_assert_eq!((f.bid, f.ask, f.mid, f.last, f.intrinsic), (b.bid, b.ask, b.mid, b.last, b.intrinsic));
            }
        }

        /// One memo over a walk of spots that come back (as prices do) and several strikes
        /// (so that two keys meet in one slot): every book is bit for bit the unmemoised one.
        #[test]
        fn book_quote_memo_matches_book_quote(
            start in 10_000i64..20_000_000,
            walk in proptest::collection::vec((-3i64..=3, 0i64..8, any::<bool>()), 1..400),
            strike_off in -6i64..=2,
            t in prop_oneof![1 => Just(0.0), 1 => Just(f64::NAN), 8 => 0.0f64..0.5],
            rate in -0.05f64..0.1,
            atm_iv in prop_oneof![Just(0.0), 0.01f64..3.0],
            skew in -3.0f64..1.0,
        ) {
            let smile = Smile { atm_iv, skew };
            let mut memo = MoneyMemo::default();
            let mut spot = start;
            for (step, strike_i, put) in walk {
                spot = (spot + step * 100).max(1);
                let right = if put { Right::Put } else { Right::Call };
                // Strikes about the spot, where a price turns on its logs.
                let strike = Px((start / 10_000 + strike_off + strike_i).max(0) * 10_000);
                let plain = book_quote(right, Px(spot), strike, t, rate, smile);
                let memoised = book_quote_memo(right, Px(spot), strike, t, rate, smile, &mut memo);
                prop_assert_eq!(plain.is_some(), memoised.is_some());
                if let (Some(a), Some(b)) = (plain, memoised) {
                    prop_assert_eq!(a.fair.to_bits(), b.fair.to_bits());
                    prop_assert_eq!((a.bid, a.ask, a.mid, a.last, a.intrinsic), (b.bid, b.ask, b.mid, b.last, b.intrinsic));
                }
            }
        }
    }

    /// Two contracts whose keys share a slot at one spot: each is priced at its own strike.
    #[test]
    fn memo_slot_shared_by_two_strikes_keeps_them_apart() {
        let spot = Px(5_000_000);
        let k1 = Px(5_000_000);
        let k2 = (1..10_000)
            .map(|n| Px(k1.raw() + n * 10_000))
            .find(|k| memo_slot(spot.raw(), k.raw()) == memo_slot(spot.raw(), k1.raw()))
            .expect("a strike sharing the slot");
        let smile = Smile {
            atm_iv: 0.2,
            skew: -0.5,
        };
        let mut memo = MoneyMemo::default();
        for k in [k1, k2, k1, k2] {
            let plain = book_quote(Right::Put, spot, k, 0.01, 0.04, smile).unwrap();
            let memoised =
                book_quote_memo(Right::Put, spot, k, 0.01, 0.04, smile, &mut memo).unwrap();
            assert_eq!(plain.fair.to_bits(), memoised.fair.to_bits(), "strike {k}");
        }
    }

    #[test]
    fn textbook_black_scholes() {
        let c = black_scholes(Right::Call, 100.0, 100.0, 1.0, 0.05, 0.2).unwrap();
        assert!((c.price - 10.4506).abs() < 1e-4, "{}", c.price);
        let p = black_scholes(Right::Put, 100.0, 100.0, 1.0, 0.05, 0.2).unwrap();
        assert!((p.price - 5.5735).abs() < 1e-4, "{}", p.price);
        // Put-call parity: C - P = S - K e^{-rT}.
        for &(s, k, t, r, v) in &[
            (100.0, 90.0, 0.5, 0.03, 0.3),
            (500.0, 510.0, 0.002, 0.043, 0.15),
        ] {
            let c = black_scholes(Right::Call, s, k, t, r, v).unwrap();
            let p = black_scholes(Right::Put, s, k, t, r, v).unwrap();
            let parity = s - k * libm::exp(-r * t);
            assert!((c.price - p.price - parity).abs() < 1e-9);
            assert!((c.delta - p.delta - 1.0).abs() < 1e-12);
            assert!((c.gamma - p.gamma).abs() < 1e-15);
        }
        assert!((c.delta - 0.6368).abs() < 1e-4);
        assert!((c.gamma - 0.018762).abs() < 1e-5);
    }

    #[test]
    fn book_on_grid() {
        for i in 0..2000 {
            let fair = f64::from(i) * 0.0137;
            let (bid, ask) = option_book(fair);
            assert!(bid >= Px::ZERO && ask > bid, "{fair}: {bid} {ask}");
            assert!(bid.to_f64() <= fair + 1e-9 && ask.to_f64() >= fair - 1e-9);
            for p in [bid, ask] {
                let tick = option_tick(p.to_f64());
                assert_eq!(p.raw() % tick.raw(), 0, "{fair}: {p} not on {tick}");
            }
        }
        assert_eq!(option_book(1.00), (Px::from_cents(98), Px::from_cents(102)));
        assert_eq!(
            option_book(10.00),
            (Px::from_cents(985), Px::from_cents(1015))
        );
        assert_eq!(option_book(0.0), (Px::ZERO, Px::CENT));
    }

    #[test]
    fn intrinsic_and_smile() {
        let s = Px::from_cents(50_012);
        assert_eq!(
            intrinsic(Right::Call, s, Px::from_cents(49_900)),
            Px::from_cents(112)
        );
        assert_eq!(intrinsic(Right::Put, s, Px::from_cents(49_900)), Px::ZERO);
        assert_eq!(
            intrinsic(Right::Put, s, Px::from_cents(50_100)),
            Px::from_cents(88)
        );
        let iv = smile_iv(0.20, -0.8, 100.0, 95.0);
        assert!((iv - (0.20 - 0.8 * libm::log(0.95))).abs() < 1e-15);
        assert_eq!(smile_iv(0.02, -0.8, 100.0, 200.0), MIN_IV);
    }

    #[test]
    fn oi_model() {
        let step = Px::from_cents(100);
        let r = Px::from_cents(50_000);
        let atm = open_interest(Expiry::ZeroDte, Right::Call, r, r, step);
        let far = open_interest(
            Expiry::ZeroDte,
            Right::Call,
            Px::from_cents(54_100),
            r,
            step,
        );
        assert_eq!(atm, 50_000); // 20000 * 2.5 on a multiple of 10 steps
        assert!(far < atm / 10);
        let itm = open_interest(
            Expiry::ZeroDte,
            Right::Call,
            Px::from_cents(49_900),
            r,
            step,
        );
        let otm = open_interest(Expiry::ZeroDte, Right::Put, Px::from_cents(49_900), r, step);
        assert_eq!(itm * 2, otm);
    }
}
