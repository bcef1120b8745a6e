//! A plain Rust value tree for the wire format, with a [`Builder`] and an encoder.
//!
//! Used by `cargo test` and the fuzzer to drive the same decoder the Python bindings use,
//! without Python. Floats are kept as bits so that equality is exact.

use std::collections::HashSet;

use super::compress::compress_checkpoint;
use super::decode::{Builder, Kind, Scalar};
use super::repeats::{Repeats, Use};
use super::wire::{TooLong, Writer};
use super::{ext, COMPRESSED_FORMAT_VERSION, FORMAT_VERSION};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    /// The bits of an f64.
    Float(u64),
    Str(String),
    Bin(Vec<u8>),
    BigInt {
        negative: bool,
        magnitude: Vec<u8>,
    },
    SurrogateStr(Vec<u8>),
    Uuid([u8; 16]),
    Decimal(String),
    Map(Vec<(Value, Value)>),
    /// Every other container: list, tuple, set, registered object, datetime...
    Seq(Kind, Vec<Value>),
}

/// Builds [`Value`]s; rejects duplicate map keys and set elements like the Python builder.
#[derive(Debug, Default)]
pub struct ValueBuilder;

impl Builder for ValueBuilder {
    type Value = Value;
    type Error = String;

    fn scalar(&mut self, s: Scalar<'_>, _key: bool) -> Result<Value, String> {
        Ok(match s {
            Scalar::Nil => Value::Nil,
            Scalar::Bool(v) => Value::Bool(v),
            Scalar::Int(v) => Value::Int(v),
            Scalar::UInt(v) => Value::UInt(v),
            Scalar::Float(v) => Value::Float(v.to_bits()),
            Scalar::Str(text) => match std::str::from_utf8(text) {
                Ok(text) => Value::Str(text.to_owned()),
                Err(e) => {
                    return Err(format!(
                        "expected a UTF-8 str, found an invalid byte at str offset {}",
                        e.valid_up_to()
                    ))
                }
            },
            Scalar::Bin(v) => Value::Bin(v.to_vec()),
            Scalar::BigInt {
                negative,
                magnitude,
            } => Value::BigInt {
                negative,
                magnitude: magnitude.to_vec(),
            },
            Scalar::SurrogateStr(v) => Value::SurrogateStr(v.to_vec()),
            Scalar::Uuid(v) => Value::Uuid(*v),
            Scalar::Decimal(v) => Value::Decimal(v.to_owned()),
        })
    }

    fn container(
        &mut self,
        kind: Kind,
        items: &mut Vec<Value>,
        start: usize,
    ) -> Result<Value, String> {
        let items: Vec<Value> = items.drain(start..).collect();
        if kind == Kind::Map {
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut seen = HashSet::new();
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                if !seen.insert(k.clone()) {
                    return Err("duplicate map key".into());
                }
                pairs.push((k, v));
            }
            return Ok(Value::Map(pairs));
        }
        if matches!(kind, Kind::Set | Kind::FrozenSet)
            && items.iter().collect::<HashSet<_>>().len() != items.len()
        {
            return Err("duplicate set element".into());
        }
        Ok(Value::Seq(kind, items))
    }

    fn record(
        &mut self,
        _shape: usize,
        keys: &[Value],
        items: &mut Vec<Value>,
        start: usize,
    ) -> Result<Value, String> {
        let pairs = keys.iter().cloned().zip(items.drain(start..)).collect();
        Ok(Value::Map(pairs))
    }
}

/// Writes a whole checkpoint (envelope and body) in format 1: plain msgpack, no tables.
pub fn encode(v: &Value) -> Result<Vec<u8>, TooLong> {
    encode_version(v, 1)
}

/// Writes a whole checkpoint in the given format version; format 2 shares repeated strings
/// and map shapes, recognised by content, and format 3 compresses a format-2 body.
pub fn encode_version(v: &Value, version: u8) -> Result<Vec<u8>, TooLong> {
    if version >= COMPRESSED_FORMAT_VERSION {
        return compress_checkpoint(&encode_version(v, FORMAT_VERSION)?);
    }
    let mut e = Encoder {
        w: Writer::default(),
        share: (version >= 2).then(Sharing::default),
    };
    e.w.envelope(version.min(FORMAT_VERSION));
    e.write(v)?;
    Ok(e.w.buf)
}

struct Sharing {
    strings: Repeats<String>,
    shapes: Repeats<Vec<String>>,
}

impl Default for Sharing {
    fn default() -> Self {
        Sharing {
            strings: Repeats::new(usize::MAX),
            shapes: Repeats::new(usize::MAX),
        }
    }
}

struct Encoder {
    w: Writer,
    share: Option<Sharing>,
}

impl Encoder {
    fn write(&mut self, v: &Value) -> Result<(), TooLong> {
        match (v, self.share.as_mut()) {
            (Value::Str(s), Some(share)) => match share.strings.note(s.as_str()) {
                Use::First | Use::Plain => self.w.str(s.as_bytes()),
                Use::Define(_) => self.w.ext(ext::STR_DEF, s.as_bytes()),
                Use::Ref(i) => {
                    self.w.index_ref(ext::STR_REF, i);
                    Ok(())
                }
            },
            (Value::Map(pairs), Some(share)) => {
                let keys: Option<Vec<String>> = pairs
                    .iter()
                    .map(|(k, _)| match k {
                        Value::Str(k) => Some(k.clone()),
                        _ => None,
                    })
                    .collect();
                let usage = match keys {
                    Some(keys) if !keys.is_empty() => share.shapes.note(keys.as_slice()),
                    _ => Use::Plain,
                };
                self.map(pairs, usage)
            }
            (Value::Map(pairs), None) => self.map(pairs, Use::Plain),
            (Value::Seq(Kind::List, items), _) => self.items(items),
            (Value::Seq(kind, items), _) => {
                let mark = self.w.ext_begin();
                self.items(items)?;
                self.w.ext_end(mark, ext_code(*kind))
            }
            (v, _) => write_scalar(&mut self.w, v),
        }
    }

    /// A map in full, or as a record `[shape, values...]` when its key list repeats.
    fn map(&mut self, pairs: &[(Value, Value)], usage: Use) -> Result<(), TooLong> {
        match usage {
            Use::First | Use::Plain => {
                self.w.map(pairs.len())?;
                for (k, v) in pairs {
                    self.write(k)?;
                    self.write(v)?;
                }
                return Ok(());
            }
            Use::Define(_) => {
                self.w.array(pairs.len() + 1)?;
                let mark = self.w.ext_begin();
                self.w.array(pairs.len())?;
                for (k, _) in pairs {
                    if let Value::Str(k) = k {
                        self.w.str(k.as_bytes())?;
                    }
                }
                self.w.ext_end(mark, ext::SHAPE_DEF)?;
            }
            Use::Ref(i) => {
                self.w.array(pairs.len() + 1)?;
                self.w.index_ref(ext::SHAPE_REF, i);
            }
        }
        pairs.iter().try_for_each(|(_, v)| self.write(v))
    }

    fn items(&mut self, items: &[Value]) -> Result<(), TooLong> {
        self.w.array(items.len())?;
        items.iter().try_for_each(|v| self.write(v))
    }
}

fn write_scalar(w: &mut Writer, v: &Value) -> Result<(), TooLong> {
    match v {
        Value::Nil => w.nil(),
        Value::Bool(b) => w.bool(*b),
        Value::Int(i) => w.int(*i),
        Value::UInt(u) => w.uint(*u),
        Value::Float(bits) => w.float(f64::from_bits(*bits)),
        Value::Str(s) => w.str(s.as_bytes())?,
        Value::Bin(b) => w.bin(b)?,
        Value::BigInt {
            negative,
            magnitude,
        } => {
            let mut p = vec![*negative as u8];
            p.extend_from_slice(magnitude);
            w.ext(ext::BIGINT, &p)?
        }
        Value::SurrogateStr(b) => w.ext(ext::SURROGATE_STR, b)?,
        Value::Uuid(b) => w.ext(ext::UUID, b)?,
        Value::Decimal(s) => w.ext(ext::DECIMAL, s.as_bytes())?,
        // Containers are written by the encoder.
        Value::Map(_) | Value::Seq(..) => {}
    }
    Ok(())
}

/// The ext code of a structured kind (lists and maps are plain msgpack).
pub fn ext_code(kind: Kind) -> i8 {
    match kind {
        Kind::List | Kind::Map | Kind::Record => 0,
        Kind::Tuple => ext::TUPLE,
        Kind::Set => ext::SET,
        Kind::FrozenSet => ext::FROZENSET,
        Kind::Object => ext::OBJECT,
        Kind::DateTime => ext::DATETIME,
        Kind::Date => ext::DATE,
        Kind::Time => ext::TIME,
        Kind::TimeDelta => ext::TIMEDELTA,
    }
}
