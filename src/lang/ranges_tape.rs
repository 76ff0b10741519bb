//! The model's serialization for the number-range walk ([`super::ranges`]) as a flat tape.
//!
//! The walk reads the model's serde serialization, so that a field added later cannot escape
//! the check. [`super::ranges_tree`] builds it as a tree of [`Node`](super::ranges_tree)s, one
//! heap allocation per object and array and most of `kestrel print`'s time on a large
//! document (allocating, then freeing). The [`Tape`] holds the same tree in preorder in one
//! `Vec` (and the strings the walk reads in one `String`), both reused from statement to
//! statement, so that a walk of a whole document allocates nothing after its first
//! statements. It is the tree as far as the walk can tell: objects hold their entries in
//! serialization order, a repeated key is read as `serde_json::Map` would keep it (at its
//! first place, with its last value), numbers are told apart as `as_u64` tells them, and of
//! strings only those the walk reads (under `text`, `unit` and `kind`) are kept.
//! `tests` in [`super::ranges`] check the walk over the tape against the walk over the tree.

use serde::ser::{self, Serialize};

/// One event of the tape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ev {
    /// A non-negative integer (`Value::as_u64` is `Some`).
    U64(u64),
    /// A string the walk reads: a range of [`Tape::strs`].
    Str(u32, u32),
    /// Anything else that is not an array or object.
    Other,
    /// An array; `end`: the index after its last element's events.
    Arr { end: u32 },
    /// An object: `Key` events, each followed by its value's events; `end` as for `Arr`.
    Obj { end: u32 },
    /// A field or variant name.
    Key(&'static str),
    /// A map's key, serialized: a range of [`Tape::strs`].
    OwnedKey(u32, u32),
}

/// A statement's serialization; `clear` and refill it for the next.
#[derive(Debug, Default)]
pub(crate) struct Tape {
    pub ev: Vec<Ev>,
    pub strs: String,
}

#[derive(Debug)]
pub(crate) struct Error;

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not serializable as JSON")
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Error
    }
}

/// Keys whose string values the walk reads.
fn keeps(key: &str) -> bool {
    matches!(key, "text" | "unit" | "kind")
}

/// Keys are short: a byte loop beats a call to `memcmp`.
#[inline]
fn key_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && (0..a.len()).all(|i| a[i] == b[i])
}

impl Tape {
    /// Replace the tape with `v`'s serialization (`Err` where `serde_json::to_value` would
    /// fail).
    pub fn fill<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.ev.clear();
        self.strs.clear();
        v.serialize(Ser {
            t: self,
            keep: false,
        })
    }

    fn str_range(&mut self, s: &str) -> (u32, u32) {
        let a = self.strs.len();
        self.strs.push_str(s);
        (a as u32, self.strs.len() as u32)
    }

    /// The index after the value starting at `i`.
    #[inline]
    pub fn skip(&self, i: usize) -> usize {
        match self.ev[i] {
            Ev::Arr { end } | Ev::Obj { end } => end as usize,
            _ => i + 1,
        }
    }

    /// The key at `i` (a `Key` or `OwnedKey` event).
    #[inline]
    pub fn key(&self, i: usize) -> &str {
        match self.ev[i] {
            Ev::Key(k) => k,
            Ev::OwnedKey(a, b) => &self.strs[a as usize..b as usize],
            _ => "",
        }
    }

    /// The entries of the object at `obj`: (index of the key, index of the value), in
    /// serialization order, every key (repeated or not).
    pub fn entries(&self, obj: usize) -> Entries<'_> {
        let end = match self.ev[obj] {
            Ev::Obj { end } => end as usize,
            _ => obj + 1,
        };
        Entries {
            t: self,
            i: obj + 1,
            end,
        }
    }

    /// The value under `key` of the object at `obj` (a repeated key: its last value).
    pub fn get(&self, obj: usize, key: &str) -> Option<usize> {
        let mut found = None;
        for (k, v) in self.entries(obj) {
            if key_eq(self.key(k), key) {
                found = Some(v);
            }
        }
        found
    }

    pub fn as_u64(&self, i: usize) -> Option<u64> {
        match self.ev[i] {
            Ev::U64(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_str(&self, i: usize) -> Option<&str> {
        match self.ev[i] {
            Ev::Str(a, b) => Some(&self.strs[a as usize..b as usize]),
            _ => None,
        }
    }

    /// The tree of the value at `i` (tests: the tape must hold the tree's shape).
    #[cfg(test)]
    pub fn to_node(&self, i: usize) -> super::ranges_tree::Node {
        use super::ranges_tree::Node;
        match self.ev[i] {
            Ev::U64(n) => Node::U64(n),
            Ev::Str(..) => Node::Str(self.as_str(i).unwrap_or("").to_string()),
            Ev::Other | Ev::Key(_) | Ev::OwnedKey(..) => Node::Other,
            Ev::Arr { end } => {
                let mut items = Vec::new();
                let mut j = i + 1;
                while j < end as usize {
                    items.push(self.to_node(j));
                    j = self.skip(j);
                }
                Node::Arr(items)
            }
            Ev::Obj { .. } => {
                let mut m: Vec<(std::borrow::Cow<'static, str>, Node)> = Vec::new();
                for (k, v) in self.entries(i) {
                    let key = self.key(k).to_string();
                    let node = self.to_node(v);
                    match m.iter_mut().find(|(x, _)| *x == key) {
                        Some(e) => e.1 = node,
                        None => m.push((std::borrow::Cow::Owned(key), node)),
                    }
                }
                Node::Obj(m)
            }
        }
    }
}

/// See [`Tape::entries`].
pub(crate) struct Entries<'a> {
    t: &'a Tape,
    i: usize,
    end: usize,
}

impl Iterator for Entries<'_> {
    type Item = (usize, usize);
    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        let k = self.i;
        let v = k + 1;
        if v >= self.end {
            return None;
        }
        self.i = self.t.skip(v);
        Some((k, v))
    }
}

/// The serializer; `keep`: the value sits under a key whose string the walk reads.
struct Ser<'a> {
    t: &'a mut Tape,
    keep: bool,
}

type R = Result<(), Error>;

impl Ser<'_> {
    fn push(self, e: Ev) -> R {
        self.t.ev.push(e);
        Ok(())
    }
}

impl<'a> ser::Serializer for Ser<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Open<'a>;
    type SerializeTuple = Open<'a>;
    type SerializeTupleStruct = Open<'a>;
    type SerializeTupleVariant = Open<'a>;
    type SerializeMap = Open<'a>;
    type SerializeStruct = Open<'a>;
    type SerializeStructVariant = Open<'a>;

    fn serialize_bool(self, _: bool) -> R {
        self.push(Ev::Other)
    }
    fn serialize_i8(self, v: i8) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> R {
        self.push(u64::try_from(v).map_or(Ev::Other, Ev::U64))
    }
    fn serialize_i128(self, v: i128) -> R {
        // serde_json: an i128 within i64 or u64 is a number; outside, an error.
        match (u64::try_from(v), i64::try_from(v)) {
            (Ok(u), _) => self.push(Ev::U64(u)),
            (_, Ok(_)) => self.push(Ev::Other),
            _ => Err(Error),
        }
    }
    fn serialize_u8(self, v: u8) -> R {
        self.push(Ev::U64(u64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> R {
        self.push(Ev::U64(u64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> R {
        self.push(Ev::U64(u64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> R {
        self.push(Ev::U64(v))
    }
    fn serialize_u128(self, v: u128) -> R {
        let u = u64::try_from(v).map_err(|_| Error)?;
        self.push(Ev::U64(u))
    }
    fn serialize_f32(self, _: f32) -> R {
        self.push(Ev::Other)
    }
    fn serialize_f64(self, _: f64) -> R {
        self.push(Ev::Other)
    }
    fn serialize_char(self, v: char) -> R {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> R {
        if self.keep {
            let (a, b) = self.t.str_range(v);
            self.push(Ev::Str(a, b))
        } else {
            self.push(Ev::Other)
        }
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        let end = self.t.ev.len() + 1 + v.len();
        self.t.ev.push(Ev::Arr { end: end as u32 });
        self.t.ev.extend(v.iter().map(|&b| Ev::U64(u64::from(b))));
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.push(Ev::Other)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.push(Ev::Other)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        self.push(Ev::Other)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        let at = open(self.t, Ev::Obj { end: 0 });
        self.t.ev.push(Ev::Key(variant));
        v.serialize(Ser {
            t: self.t,
            keep: keeps(variant),
        })?;
        close(self.t, at);
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Open<'a>, Error> {
        let at = open(self.t, Ev::Arr { end: 0 });
        Ok(Open {
            t: self.t,
            at,
            outer: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Open<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Open<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Open<'a>, Error> {
        // `{variant: [items]}`
        let outer = open(self.t, Ev::Obj { end: 0 });
        self.t.ev.push(Ev::Key(variant));
        let at = open(self.t, Ev::Arr { end: 0 });
        Ok(Open {
            t: self.t,
            at,
            outer: Some(outer),
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Open<'a>, Error> {
        let at = open(self.t, Ev::Obj { end: 0 });
        Ok(Open {
            t: self.t,
            at,
            outer: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Open<'a>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Open<'a>, Error> {
        // `{variant: {fields}}`
        let outer = open(self.t, Ev::Obj { end: 0 });
        self.t.ev.push(Ev::Key(variant));
        let at = open(self.t, Ev::Obj { end: 0 });
        Ok(Open {
            t: self.t,
            at,
            outer: Some(outer),
        })
    }
}

/// Push an array or object event whose `end` is set by [`close`]; its index.
fn open(t: &mut Tape, e: Ev) -> usize {
    t.ev.push(e);
    t.ev.len() - 1
}

fn close(t: &mut Tape, at: usize) {
    let end = t.ev.len() as u32;
    match &mut t.ev[at] {
        Ev::Arr { end: e } | Ev::Obj { end: e } => *e = end,
        _ => {}
    }
}

/// An array or object being written; `outer`: the `{variant: ...}` object around it.
pub(crate) struct Open<'a> {
    t: &'a mut Tape,
    at: usize,
    outer: Option<usize>,
}

impl Open<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        v.serialize(Ser {
            t: self.t,
            keep: false,
        })
    }
    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R {
        self.t.ev.push(Ev::Key(key));
        v.serialize(Ser {
            t: self.t,
            keep: keeps(key),
        })
    }
    fn done(self) -> R {
        close(self.t, self.at);
        if let Some(o) = self.outer {
            close(self.t, o);
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTuple for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTupleStruct for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTupleVariant for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeMap for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> R {
        let k = k.serialize(KeySer)?;
        let (a, b) = self.t.str_range(&k);
        self.t.ev.push(Ev::OwnedKey(a, b));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let keep = match self.t.ev.last() {
            Some(&Ev::OwnedKey(a, b)) => keeps(&self.t.strs[a as usize..b as usize]),
            _ => return Err(Error),
        };
        v.serialize(Ser { t: self.t, keep })
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeStruct for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R {
        self.field(key, v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeStructVariant for Open<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R {
        self.field(key, v)
    }
    fn end(self) -> R {
        self.done()
    }
}

/// Map keys as serde_json writes them: strings as they are, integers, chars and bools as
/// their text; anything else is an error.
pub(crate) struct KeySer;

type K = Result<String, Error>;

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    fn serialize_bool(self, v: bool) -> K {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> K {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> K {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> K {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> K {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> K {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> K {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> K {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> K {
        Ok(v.to_string())
    }
    fn serialize_f32(self, _: f32) -> K {
        Err(Error)
    }
    fn serialize_f64(self, _: f64) -> K {
        Err(Error)
    }
    fn serialize_char(self, v: char) -> K {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> K {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> K {
        Err(Error)
    }
    fn serialize_none(self) -> K {
        Err(Error)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> K {
        Err(Error)
    }
    fn serialize_unit(self) -> K {
        Err(Error)
    }
    fn serialize_unit_struct(self, _: &'static str) -> K {
        Err(Error)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> K {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> K {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> K {
        Err(Error)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error)
    }
}
