//! The iterative decoder: reads the envelope and body with an explicit stack of open
//! containers, enforcing [`Limits`], and lets a [`Builder`] make the values.
//!
//! Nothing here recurses, so a nesting bomb costs one small frame per level up to
//! `max_depth` and then fails. Values wait on one stack until their container is complete;
//! that stack only grows by values actually read, so memory stays proportional to the input.

use super::wire::{is_utf8_with_surrogates, Reader, Token, WireError};
use super::{
    compress, ext, Limits, COMPRESSED_FORMAT_VERSION, FORMAT_VERSION, MAGIC, OLDEST_FORMAT_VERSION,
};

/// What a complete container becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    List,
    Map,
    Tuple,
    Set,
    FrozenSet,
    Object,
    DateTime,
    Date,
    Time,
    TimeDelta,
    /// A format-2 record: a dict whose keys come from the shape table.
    Record,
}

impl Kind {
    /// The structured ext types: their payload is exactly one msgpack array.
    fn of_ext(code: i8) -> Option<Kind> {
        Some(match code {
            ext::TUPLE => Kind::Tuple,
            ext::SET => Kind::Set,
            ext::FROZENSET => Kind::FrozenSet,
            ext::OBJECT => Kind::Object,
            ext::DATETIME => Kind::DateTime,
            ext::DATE => Kind::Date,
            ext::TIME => Kind::Time,
            ext::TIMEDELTA => Kind::TimeDelta,
            _ => return None,
        })
    }

    /// The number of items a fixed-shape kind must have.
    pub fn arity(self) -> Option<usize> {
        match self {
            Kind::Object | Kind::Date | Kind::TimeDelta => Some(3),
            Kind::DateTime => Some(9),
            Kind::Time => Some(6),
            _ => None,
        }
    }
}

/// A leaf value, already checked at the wire level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// Not yet validated: the builder must reject anything but strict UTF-8.
    Str(&'a [u8]),
    Bin(&'a [u8]),
    /// Outside the 64-bit range; `magnitude` is big-endian with no leading zero byte.
    BigInt {
        negative: bool,
        magnitude: &'a [u8],
    },
    /// UTF-8 bytes that may encode lone surrogates.
    SurrogateStr(&'a [u8]),
    Uuid(&'a [u8; 16]),
    /// ASCII text of a decimal number, checked to use only its alphabet.
    Decimal(&'a str),
}

/// Makes values from what the decoder reads. Errors abort the whole decode.
pub trait Builder {
    type Value: Clone;
    type Error;
    /// Called once with the checkpoint's format version, before any value.
    fn format(&mut self, _version: u8) {}
    /// `key` is true when the value is a map key (a hint for key caches).
    fn scalar(&mut self, s: Scalar<'_>, key: bool) -> Result<Self::Value, Self::Error>;
    /// Builds a container from `items[start..]` (for maps: key, value, key, value...) and
    /// must leave `items` truncated to `start`.
    fn container(
        &mut self,
        kind: Kind,
        items: &mut Vec<Self::Value>,
        start: usize,
    ) -> Result<Self::Value, Self::Error>;
    /// Builds a map from distinct `keys` (checked by the decoder), those of the checkpoint's
    /// `shape`-th record shape, and the values `items[start..]`, one per key; must leave
    /// `items` truncated to `start`.
    fn record(
        &mut self,
        shape: usize,
        keys: &[Self::Value],
        items: &mut Vec<Self::Value>,
        start: usize,
    ) -> Result<Self::Value, Self::Error>;
    /// Called once the name of a registered object (the first item of its ext 5 array) is
    /// read. Returning true lets the builder make the object's version and state its own way
    /// (as Rust values rather than Python ones, say); [`Builder::end_object_state`] is called
    /// when they are complete, before the object itself is built.
    fn begin_object_state(&mut self, _name: &Self::Value) -> bool {
        false
    }
    fn end_object_state(&mut self) {}
    /// A value for a string-table reference to `entry`. A builder in another mode than the
    /// one that made `entry` may convert it, and may update `entry` for later references.
    fn reuse(&mut self, entry: &mut Self::Value) -> Self::Value {
        entry.clone()
    }
}

/// Why a decode failed: a malformed input, or the builder refused a value. Boxed so the
/// `Result`s on the hot path stay two words wide.
#[derive(Debug)]
pub enum Failure<E> {
    Wire(WireError),
    Build { offset: usize, error: Box<E> },
}

impl<E> From<WireError> for Failure<E> {
    fn from(e: WireError) -> Self {
        Failure::Wire(e)
    }
}

/// An open container.
struct Frame {
    kind: Kind,
    /// Values still to read.
    remaining: usize,
    /// Where its values begin on the value stack.
    start: usize,
    /// Where an ext payload must end, for structured ext types.
    end: Option<usize>,
    /// Byte offset of the container's first byte, for error messages.
    offset: usize,
    /// For records: the index of their shape.
    shape: usize,
}

/// Decodes a whole checkpoint: envelope, body, and nothing after it.
pub fn decode<B: Builder>(
    input: &[u8],
    limits: &Limits,
    builder: &mut B,
) -> Result<B::Value, Failure<B::Error>> {
    if input.len() > limits.max_size {
        let msg = format!(
            "input of {} bytes exceeds max_size={}",
            input.len(),
            limits.max_size
        );
        return Err(WireError::new(0, msg).into());
    }
    let mut reader = Reader::new(input);
    let version = read_envelope(&mut reader)?;
    if version == COMPRESSED_FORMAT_VERSION {
        // Format 3: a format-2 body, compressed. The limits apply to the decompressed body,
        // whose error offsets count from its start.
        let body = compress::read_compressed_body(&mut reader, limits)?;
        builder.format(FORMAT_VERSION);
        return decode_body(Reader::new(&body), limits, FORMAT_VERSION, builder).map_err(
            |failure| match failure {
                Failure::Wire(e) => Failure::Wire(e.in_decompressed_body()),
                build => build,
            },
        );
    }
    builder.format(version);
    decode_body(reader, limits, version, builder)
}

/// Decodes the body of format `version` that `reader` is at, then checks nothing follows.
fn decode_body<B: Builder<Value: Clone>>(
    reader: Reader<'_>,
    limits: &Limits,
    version: u8,
    builder: &mut B,
) -> Result<B::Value, Failure<B::Error>> {
    Decoder {
        reader,
        limits,
        version,
        frames: Vec::new(),
        values: Vec::new(),
        items: 0,
        strings: Vec::new(),
        shape_keys: Vec::new(),
        shapes: Vec::new(),
        object_state: None,
    }
    .run(builder)
}

/// Checks the envelope head and returns the format version.
fn read_envelope(r: &mut Reader<'_>) -> Result<u8, WireError> {
    let not_ours = |at| {
        WireError::new(
            at,
            "expected a rillet checkpoint (envelope [\"rillet-ckpt\", version, body])",
        )
    };
    match r.next() {
        Ok(Token::Array(3)) => {}
        _ => return Err(not_ours(0)),
    }
    let at = r.pos();
    match r.next() {
        Ok(Token::Str(text)) if text == MAGIC.as_bytes() => {}
        _ => return Err(not_ours(at)),
    }
    let at = r.pos();
    const NEWEST: u8 = COMPRESSED_FORMAT_VERSION;
    let known = OLDEST_FORMAT_VERSION as i64..=NEWEST as i64;
    match r.next()? {
        Token::Int(v) if known.contains(&v) => Ok(v as u8),
        Token::Int(v) if v > NEWEST as i64 => Err(WireError::new(
            at,
            format!("checkpoint format version {v} is newer than this rillet reads ({NEWEST}); upgrade rillet"),
        )),
        _ => Err(WireError::new(
            at,
            format!("expected a format version from {OLDEST_FORMAT_VERSION} to {NEWEST}"),
        )),
    }
}

struct Decoder<'a, 'l, V> {
    reader: Reader<'a>,
    limits: &'l Limits,
    version: u8,
    frames: Vec<Frame>,
    values: Vec<V>,
    items: usize,
    /// Format 2: the strings defined so far, in reading order.
    strings: Vec<V>,
    /// Format 2: the keys of every shape defined so far, one after the other...
    shape_keys: Vec<V>,
    /// ...and where each shape's keys are in `shape_keys`: (start, count).
    shapes: Vec<(usize, usize)>,
    /// The frame index of the registered object whose state the builder makes its own way
    /// (see [`Builder::begin_object_state`]).
    object_state: Option<usize>,
}

impl<'a, V: Clone> Decoder<'a, '_, V> {
    fn run<B: Builder<Value = V>>(mut self, b: &mut B) -> Result<V, Failure<B::Error>> {
        loop {
            let at = self.reader.pos();
            self.items += 1;
            if self.items > self.limits.max_items {
                let msg = format!("more than max_items={} values", self.limits.max_items);
                return Err(WireError::new(at, msg).into());
            }
            // The most frequent token of a format-2 body: a one-byte string reference.
            if let Some(index) = self
                .reader
                .fixext1(ext::STR_REF)
                .filter(|_| self.version >= 2)
            {
                let defined = self.strings.len();
                let Some(s) = self.strings.get_mut(index as usize) else {
                    return Err(undefined(at, "string", index as usize, defined).into());
                };
                let s = b.reuse(s);
                self.values.push(s);
                if let Some(body) = self.close_finished(b)? {
                    return self.finish(body);
                }
                continue;
            }
            let key = self
                .frames
                .last()
                .is_some_and(|f| f.kind == Kind::Map && (self.values.len() - f.start) % 2 == 0);
            let value = match self.reader.next()? {
                Token::Array(n) => self.open_array(b, n, at).map(|()| None)?,
                Token::Map(n) => self
                    .open(Kind::Map, n.saturating_mul(2), None, at)
                    .map(|()| None)?,
                Token::Ext { code, start, len } if code >= ext::STR_DEF && self.version >= 2 => {
                    Some(self.shared_str(b, code, start, len, key, at)?)
                }
                Token::Ext { code, start, len } => match Kind::of_ext(code) {
                    Some(kind) => self.open_ext(kind, code, start, len, at).map(|()| None)?,
                    None => {
                        let s = ext_scalar(self.reader.bytes(start, len), code, at)?;
                        Some(self.make_scalar(b, s, key, at)?)
                    }
                },
                t => Some(self.make_scalar(b, token_scalar(t), key, at)?),
            };
            let done = match value {
                Some(v) => {
                    self.values.push(v);
                    self.close_finished(b)?
                }
                // An empty container is complete as soon as it is opened.
                None if self.frames.last().is_some_and(|f| f.remaining == 0) => {
                    self.close_top(b)?;
                    self.close_finished(b)?
                }
                None => None,
            };
            if let Some(body) = done {
                return self.finish(body);
            }
        }
    }

    #[inline(always)]
    fn make_scalar<B: Builder<Value = V>>(
        &self,
        b: &mut B,
        s: Scalar<'_>,
        key: bool,
        at: usize,
    ) -> Result<V, Failure<B::Error>> {
        b.scalar(s, key).map_err(|error| Failure::Build {
            offset: at,
            error: Box::new(error),
        })
    }

    /// Opens an array: a list, or in format 2 a record when its first element is a shape.
    fn open_array<B: Builder<Value = V>>(
        &mut self,
        b: &mut B,
        n: usize,
        at: usize,
    ) -> Result<(), Failure<B::Error>> {
        if self.version < 2 || n == 0 {
            return self.open(Kind::List, n, None, at);
        }
        let first = self.reader.pos();
        let shape = match self.reader.fixext1(ext::SHAPE_REF) {
            // The common case, a one-byte shape reference, without the generic reader.
            Some(index) if (index as usize) < self.shapes.len() => Some(index as usize),
            Some(_) => {
                self.reader.seek(first);
                self.shape_head(b, first)?
            }
            None => self.shape_head(b, first)?,
        };
        let Some(shape) = shape else {
            self.reader.seek(first);
            return self.open(Kind::List, n, None, at);
        };
        let arity = self.shapes[shape].1;
        if n - 1 != arity {
            let msg = format!(
                "expected a record of {arity} values after its shape, found {}",
                n - 1
            );
            return Err(WireError::new(at, msg).into());
        }
        self.open(Kind::Record, arity, None, at)?;
        if let Some(top) = self.frames.last_mut() {
            top.shape = shape;
        }
        Ok(())
    }

    /// Reads the first element of an array: the index of its shape if it is a record.
    fn shape_head<B: Builder<Value = V>>(
        &mut self,
        b: &mut B,
        first: usize,
    ) -> Result<Option<usize>, Failure<B::Error>> {
        Ok(Some(match self.reader.next()? {
            Token::Ext { code, start, len } if code == ext::SHAPE_DEF => {
                self.define_shape(b, start, len)?
            }
            Token::Ext { code, start, len } if code == ext::SHAPE_REF => {
                let index = table_index(self.reader.bytes(start, len), code, first)?;
                if index >= self.shapes.len() {
                    return Err(undefined(first, "shape", index, self.shapes.len()).into());
                }
                index
            }
            _ => return Ok(None),
        }))
    }

    /// Reads a shape definition (an array of distinct strs) into the shape table.
    fn define_shape<B: Builder<Value = V>>(
        &mut self,
        b: &mut B,
        start: usize,
        len: usize,
    ) -> Result<usize, Failure<B::Error>> {
        let keys = read_shape_keys(self.reader.bytes(start, len), start)?;
        self.items += keys.len();
        if self.items > self.limits.max_items {
            let msg = format!("more than max_items={} values", self.limits.max_items);
            return Err(WireError::new(start, msg).into());
        }
        let first = self.shape_keys.len();
        for (key, at) in keys {
            let key = self.make_scalar(b, Scalar::Str(key), true, at)?;
            self.shape_keys.push(key);
        }
        self.shapes.push((first, self.shape_keys.len() - first));
        Ok(self.shapes.len() - 1)
    }

    /// A string definition (which enters the string table) or a reference to one.
    fn shared_str<B: Builder<Value = V>>(
        &mut self,
        b: &mut B,
        code: i8,
        start: usize,
        len: usize,
        key: bool,
        at: usize,
    ) -> Result<V, Failure<B::Error>> {
        let payload = self.reader.bytes(start, len);
        match code {
            ext::STR_DEF => {
                let s = self.make_scalar(b, Scalar::Str(payload), key, at)?;
                self.strings.push(s.clone());
                Ok(s)
            }
            ext::STR_REF => {
                let index = table_index(payload, code, at)?;
                let defined = self.strings.len();
                match self.strings.get_mut(index) {
                    Some(s) => Ok(b.reuse(s)),
                    None => Err(undefined(at, "string", index, defined).into()),
                }
            }
            _ => Err(WireError::new(
                at,
                format!("ext type {code} (a record shape) is only allowed as the first element of an array"),
            )
            .into()),
        }
    }

    /// Opens a container; its values come next.
    fn open<E>(
        &mut self,
        kind: Kind,
        remaining: usize,
        end: Option<usize>,
        at: usize,
    ) -> Result<(), Failure<E>> {
        if self.frames.len() >= self.limits.max_depth {
            let msg = format!("nesting deeper than max_depth={}", self.limits.max_depth);
            return Err(WireError::new(at, msg).into());
        }
        let start = self.values.len();
        self.frames.push(Frame {
            kind,
            remaining,
            start,
            end,
            offset: at,
            shape: 0,
        });
        Ok(())
    }

    /// Steps into a structured ext payload, which must be exactly one array.
    fn open_ext<E>(
        &mut self,
        kind: Kind,
        code: i8,
        start: usize,
        len: usize,
        at: usize,
    ) -> Result<(), Failure<E>> {
        self.reader.seek(start);
        let n = match self.reader.next()? {
            Token::Array(n) if len > 0 => n,
            _ => {
                return Err(WireError::new(
                    start,
                    format!("expected an array as the payload of ext type {code}"),
                )
                .into())
            }
        };
        if kind.arity().is_some_and(|a| a != n) {
            let msg = format!(
                "expected {} items in ext type {code}, found {n}",
                kind.arity().unwrap_or(0)
            );
            return Err(WireError::new(start, msg).into());
        }
        self.open(kind, n, Some(start + len), at)
    }

    /// After a value was pushed: counts it and closes every container it completes.
    /// Returns the body once the outermost value is complete.
    #[inline(always)]
    fn close_finished<B: Builder<Value = V>>(
        &mut self,
        b: &mut B,
    ) -> Result<Option<V>, Failure<B::Error>> {
        loop {
            let Some(top) = self.frames.last_mut() else {
                return Ok(self.values.pop());
            };
            top.remaining = top.remaining.saturating_sub(1);
            if top.remaining > 0 {
                if top.kind == Kind::Object && self.values.len() - top.start == 1 {
                    self.named_object(b);
                }
                return Ok(None);
            }
            self.close_top(b)?;
        }
    }

    /// The top frame is a registered object whose name was just read: lets the builder
    /// choose how to make its state.
    fn named_object<B: Builder<Value = V>>(&mut self, b: &mut B) {
        if self.object_state.is_none() {
            let name = &self.values[self.values.len() - 1];
            if b.begin_object_state(name) {
                self.object_state = Some(self.frames.len() - 1);
            }
        }
    }

    /// Pops the top frame, checks its ext payload ended where declared, and builds it.
    fn close_top<B: Builder<Value = V>>(&mut self, b: &mut B) -> Result<(), Failure<B::Error>> {
        let Some(f) = self.frames.pop() else {
            return Ok(());
        };
        if self.object_state == Some(self.frames.len()) {
            self.object_state = None;
            b.end_object_state();
        }
        if let Some(end) = f.end {
            if self.reader.pos() != end {
                let msg = format!(
                    "ext payload declared to end at byte {end} but its array ended at byte {}",
                    self.reader.pos()
                );
                return Err(WireError::new(f.offset, msg).into());
            }
        }
        let built = if f.kind == Kind::Record {
            let (first, count) = self.shapes[f.shape];
            b.record(
                f.shape,
                &self.shape_keys[first..first + count],
                &mut self.values,
                f.start,
            )
        } else {
            b.container(f.kind, &mut self.values, f.start)
        };
        let v = built.map_err(|error| Failure::Build {
            offset: f.offset,
            error: Box::new(error),
        })?;
        self.values.truncate(f.start);
        self.values.push(v);
        Ok(())
    }

    fn finish<E>(&self, body: V) -> Result<V, Failure<E>> {
        if self.reader.remaining() > 0 {
            let msg = format!(
                "expected the end of the checkpoint, found {} trailing bytes",
                self.reader.remaining()
            );
            return Err(WireError::new(self.reader.pos(), msg).into());
        }
        Ok(body)
    }
}

fn token_scalar(t: Token<'_>) -> Scalar<'_> {
    match t {
        Token::Nil => Scalar::Nil,
        Token::Bool(v) => Scalar::Bool(v),
        Token::Int(v) => Scalar::Int(v),
        Token::UInt(v) => Scalar::UInt(v),
        Token::Float(v) => Scalar::Float(v),
        Token::Str(text) => Scalar::Str(text),
        Token::Bin(v) => Scalar::Bin(v),
        // Containers and ext values are handled by the caller.
        Token::Array(_) | Token::Map(_) | Token::Ext { .. } => Scalar::Nil,
    }
}

/// Checks a raw-payload ext type and turns it into a scalar.
fn ext_scalar(p: &[u8], code: i8, at: usize) -> Result<Scalar<'_>, WireError> {
    let bad = |what: &str| WireError::new(at, format!("expected {what} in ext type {code}"));
    match code {
        ext::BIGINT => match p {
            [sign @ (0 | 1), first, ..] if *first != 0 => Ok(Scalar::BigInt {
                negative: *sign == 1,
                magnitude: &p[1..],
            }),
            _ => Err(bad(
                "a sign byte (0 or 1) and a big-endian magnitude without leading zeros",
            )),
        },
        ext::SURROGATE_STR if is_utf8_with_surrogates(p) => Ok(Scalar::SurrogateStr(p)),
        ext::SURROGATE_STR => Err(bad("UTF-8 (surrogates allowed)")),
        ext::UUID => p.try_into().map(Scalar::Uuid).map_err(|_| bad("16 bytes")),
        ext::DECIMAL => decimal_text(p)
            .map(Scalar::Decimal)
            .ok_or_else(|| bad("the text of a decimal number")),
        _ => Err(WireError::new(
            at,
            format!("unknown ext type {code} (this rillet reads types 1 to 12 in format 1, 1 to 16 in format 2)"),
        )),
    }
}

/// The index in a table reference: 1, 2 or 4 big-endian bytes.
fn table_index(p: &[u8], code: i8, at: usize) -> Result<usize, WireError> {
    match *p {
        [a] => Ok(a as usize),
        [a, b] => Ok(u16::from_be_bytes([a, b]) as usize),
        [a, b, c, d] => Ok(u32::from_be_bytes([a, b, c, d]) as usize),
        _ => Err(WireError::new(
            at,
            format!("expected a 1, 2 or 4-byte index in ext type {code}"),
        )),
    }
}

fn undefined(at: usize, what: &str, index: usize, defined: usize) -> WireError {
    WireError::new(
        at,
        format!("{what} reference {index} comes before its definition ({defined} {what}s defined so far)"),
    )
}

/// The keys of a shape definition with the offset of each: a non-empty array of distinct
/// strs (plain msgpack strs, not table references), filling the payload exactly.
fn read_shape_keys(p: &[u8], start: usize) -> Result<Vec<(&[u8], usize)>, WireError> {
    let bad = |at: usize, what: &str| {
        WireError::new(
            start + at,
            format!("expected {what} in a record shape (ext type 15)"),
        )
    };
    let mut r = Reader::new(p);
    let n = match r.next() {
        Ok(Token::Array(n)) if n > 0 => n,
        _ => return Err(bad(0, "a non-empty array of keys")),
    };
    let mut keys = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    for _ in 0..n {
        let at = r.pos();
        match r.next() {
            Ok(Token::Str(key)) if seen.insert(key) => keys.push((key, start + at)),
            Ok(Token::Str(_)) => return Err(bad(at, "distinct keys")),
            _ => return Err(bad(at, "a str key")),
        }
    }
    if r.remaining() > 0 {
        return Err(bad(r.pos(), "nothing after the keys"));
    }
    Ok(keys)
}

/// Accepts the alphabet of Python's `str(Decimal)`: digits, sign, point, exponent, NaN/Infinity.
fn decimal_text(p: &[u8]) -> Option<&str> {
    let ok = !p.is_empty()
        && p.len() <= 1 << 20
        && p.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    if ok {
        std::str::from_utf8(p).ok()
    } else {
        None
    }
}
