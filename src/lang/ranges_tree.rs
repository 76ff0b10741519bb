//! The model's shape for the number-range walk ([`super::ranges`]), without a JSON tree: the
//! reference the tests hold the walk over [`super::ranges_tape`] to (the walk read this tree
//! until the tape replaced it).
//!
//! The walk reads the model's serde serialization, so that a field added later cannot escape
//! the check. It used to build it as a `serde_json::Value`: a `String` for every key and a
//! `BTreeMap` for every object, 40 to 80 bytes of heap per byte of a document and most of
//! `kestrel print`'s time on a large one. [`Node`] is the same tree as far as the walk can
//! tell: objects hold the same keys and values, in serialization order (the order of
//! `serde_json::Map` itself depends on the build: sorted in the binary, insertion order in
//! test builds, where the dev-dependency llguidance turns on `preserve_order`; the order of the
//! walk does not change what it refuses, only the order it finds refusals in, and the checker
//! sorts those by position), numbers are told apart as `as_u64`
//! tells them, and of strings only those the walk reads (under `text`, `unit` and `kind`) are
//! kept; keys are the model's own `&'static str` field and variant names, borrowed, not copied.

use super::ranges_tape::{Error, KeySer};
use serde::ser::{self, Serialize};
use std::borrow::Cow;

/// One value of the serialization, as the walk sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A non-negative integer (`Value::as_u64` is `Some`).
    U64(u64),
    /// A string the walk reads (under `text`, `unit` or `kind`).
    Str(String),
    /// Anything else that is not an array or object: null, a bool, a negative or float
    /// number, a string the walk never reads.
    Other,
    Arr(Vec<Node>),
    /// Keys in serialization order, each once (a repeated key keeps its place and its last
    /// value, as `serde_json::Map` does).
    Obj(Vec<(Cow<'static, str>, Node)>),
}

impl Node {
    /// The value under `key` of an object (objects are small: a scan, keys compared by
    /// length first, without a `memcmp` call).
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Obj(m) => m.iter().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Node::U64(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// The tree of `v`'s serialization (`None` where `serde_json::to_value` would fail).
pub(crate) fn to_node<T: Serialize + ?Sized>(v: &T) -> Option<Node> {
    v.serialize(Ser { keep: false }).ok()
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

/// The serializer; `keep`: the value sits under a key whose string the walk reads.
#[derive(Clone, Copy)]
struct Ser {
    keep: bool,
}

type R = Result<Node, Error>;

impl ser::Serializer for Ser {
    type Ok = Node;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Seq;
    type SerializeMap = Obj;
    type SerializeStruct = Obj;
    type SerializeStructVariant = Obj;

    fn serialize_bool(self, _: bool) -> R {
        Ok(Node::Other)
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
        Ok(u64::try_from(v).map_or(Node::Other, Node::U64))
    }
    fn serialize_i128(self, v: i128) -> R {
        // serde_json: an i128 within i64 or u64 is a number; outside, an error.
        match (u64::try_from(v), i64::try_from(v)) {
            (Ok(u), _) => Ok(Node::U64(u)),
            (_, Ok(_)) => Ok(Node::Other),
            _ => Err(Error),
        }
    }
    fn serialize_u8(self, v: u8) -> R {
        Ok(Node::U64(u64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> R {
        Ok(Node::U64(u64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> R {
        Ok(Node::U64(u64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> R {
        Ok(Node::U64(v))
    }
    fn serialize_u128(self, v: u128) -> R {
        u64::try_from(v).map(Node::U64).map_err(|_| Error)
    }
    fn serialize_f32(self, _: f32) -> R {
        Ok(Node::Other)
    }
    fn serialize_f64(self, _: f64) -> R {
        Ok(Node::Other)
    }
    fn serialize_char(self, v: char) -> R {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> R {
        Ok(if self.keep {
            Node::Str(v.to_string())
        } else {
            Node::Other
        })
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        Ok(Node::Arr(
            v.iter().map(|&b| Node::U64(u64::from(b))).collect(),
        ))
    }
    fn serialize_none(self) -> R {
        Ok(Node::Other)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(Node::Other)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(Node::Other)
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
        let inner = v.serialize(Ser {
            keep: keeps(variant),
        })?;
        Ok(Node::Obj(vec![(Cow::Borrowed(variant), inner)]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        Ok(Seq {
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Seq, Error> {
        Ok(Seq {
            items: Vec::with_capacity(len),
            variant: Some(variant),
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Obj, Error> {
        Ok(Obj {
            entries: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
            variant: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Obj, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Obj, Error> {
        Ok(Obj {
            entries: Vec::with_capacity(len),
            key: None,
            variant: Some(variant),
        })
    }
}

struct Seq {
    items: Vec<Node>,
    /// A tuple variant: `{variant: [items]}`.
    variant: Option<&'static str>,
}

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.items.push(v.serialize(Ser { keep: false })?);
        Ok(())
    }
    fn done(self) -> R {
        let arr = Node::Arr(self.items);
        Ok(match self.variant {
            Some(v) => Node::Obj(vec![(Cow::Borrowed(v), arr)]),
            None => arr,
        })
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Node;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Node;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeTupleVariant for Seq {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }
    fn end(self) -> R {
        self.done()
    }
}

struct Obj {
    entries: Vec<(Cow<'static, str>, Node)>,
    /// A map's key, serialized, waiting for its value.
    key: Option<String>,
    /// A struct variant: `{variant: {fields}}`.
    variant: Option<&'static str>,
}

impl Obj {
    fn field<T: Serialize + ?Sized>(&mut self, key: Cow<'static, str>, v: &T) -> Result<(), Error> {
        let node = v.serialize(Ser { keep: keeps(&key) })?;
        // A repeated key keeps its place and takes the new value, as `serde_json::Map` does.
        match self.entries.iter_mut().find(|(k, _)| key_eq(k, &key)) {
            Some(e) => e.1 = node,
            None => self.entries.push((key, node)),
        }
        Ok(())
    }
    fn done(self) -> R {
        let obj = Node::Obj(self.entries);
        Ok(match self.variant {
            Some(v) => Node::Obj(vec![(Cow::Borrowed(v), obj)]),
            None => obj,
        })
    }
}

impl ser::SerializeMap for Obj {
    type Ok = Node;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Error> {
        self.key = Some(k.serialize(KeySer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        let k = self.key.take().ok_or(Error)?;
        self.field(Cow::Owned(k), v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeStruct for Obj {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(Cow::Borrowed(key), v)
    }
    fn end(self) -> R {
        self.done()
    }
}

impl ser::SerializeStructVariant for Obj {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(Cow::Borrowed(key), v)
    }
    fn end(self) -> R {
        self.done()
    }
}

/// The tree of a `serde_json::Value` (tests: the reference [`to_node`] must equal).
pub(crate) fn from_value(v: &serde_json::Value) -> Node {
    fn go(v: &serde_json::Value, keep: bool) -> Node {
        use serde_json::Value;
        match v {
            Value::Number(n) => n.as_u64().map_or(Node::Other, Node::U64),
            Value::String(s) if keep => Node::Str(s.clone()),
            Value::Array(a) => Node::Arr(a.iter().map(|x| go(x, false)).collect()),
            Value::Object(m) => Node::Obj(
                m.iter()
                    .map(|(k, x)| (Cow::Owned(k.clone()), go(x, keeps(k))))
                    .collect(),
            ),
            _ => Node::Other,
        }
    }
    go(v, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys sorted at every level (`serde_json::Map`'s order depends on its features).
    fn sorted(n: Node) -> Node {
        match n {
            Node::Arr(a) => Node::Arr(a.into_iter().map(sorted).collect()),
            Node::Obj(mut m) => {
                m.sort_by(|a, b| a.0.cmp(&b.0));
                Node::Obj(m.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            n => n,
        }
    }

    /// Every example document, and documents of every statement and clause kind, give the
    /// same tree through the serializer as through `serde_json::to_value`.
    #[test]
    fn the_tree_is_the_json_trees_shape() {
        let mut docs = crate::lang::example_documents();
        docs.push(
            "USING signal SPX exec SPY 2025-04-11\n# note\nPLAN p budget 99999999999999999R ttl +1441m priority 3\n  WHEN spot > 1 held 2h AND NOT (vwap < p99.9 OR T-15)\n  DO buy 2000 +1001 C @ lean(bid, fair, 0.4) esc fair 90000s cap fair+5c\n  TP 1001x frac 0.5 @ fair\n".into(),
        );
        let mut n = 0;
        for src in &docs {
            let Ok(doc) = crate::lang::parse(src) else {
                continue;
            };
            let reference = from_value(&serde_json::to_value(&doc).expect("json"));
            let tree = to_node(&doc).expect("serializes");
            assert_eq!(sorted(tree), sorted(reference), "{src}");
            n += 1;
        }
        assert!(n >= 8, "the sample parses ({n} documents)");
    }
}
