//! The iterative decoder: reads the envelope and body with an explicit stack of open
//! containers, enforcing [`Limits`], and lets a [`Builder`] make the values.
//!
//! Nothing here recurses, so a nesting bomb costs one small frame per level up to
//! `max_depth` and then fails. Values wait on one stack until their container is complete;
//! that stack only grows by values actually read, so memory stays proportional to the input.

use super::wire::{is_utf8_with_surrogates, Reader, Token, WireError};
use super::{ext, Limits, FORMAT_VERSION, MAGIC};

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
    type Value;
    type Error;
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
    read_envelope(&mut reader)?;
    let value = Decoder {
        reader,
        limits,
        frames: Vec::new(),
        values: Vec::new(),
        items: 0,
    }
    .run(builder)?;
    Ok(value)
}

fn read_envelope(r: &mut Reader<'_>) -> Result<(), WireError> {
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
    match r.next()? {
        Token::Int(v) if v == FORMAT_VERSION as i64 => Ok(()),
        Token::Int(v) if v > FORMAT_VERSION as i64 => Err(WireError::new(
            at,
            format!("checkpoint format version {v} is newer than this rillet reads ({FORMAT_VERSION}); upgrade rillet"),
        )),
        _ => Err(WireError::new(at, format!("expected format version {FORMAT_VERSION}"))),
    }
}

struct Decoder<'a, 'l, V> {
    reader: Reader<'a>,
    limits: &'l Limits,
    frames: Vec<Frame>,
    values: Vec<V>,
    items: usize,
}

impl<'a, V> Decoder<'a, '_, V> {
    fn run<B: Builder<Value = V>>(mut self, b: &mut B) -> Result<V, Failure<B::Error>> {
        loop {
            let at = self.reader.pos();
            self.items += 1;
            if self.items > self.limits.max_items {
                let msg = format!("more than max_items={} values", self.limits.max_items);
                return Err(WireError::new(at, msg).into());
            }
            let key = self
                .frames
                .last()
                .is_some_and(|f| f.kind == Kind::Map && (self.values.len() - f.start) % 2 == 0);
            let value = match self.reader.next()? {
                Token::Array(n) => self.open(Kind::List, n, None, at).map(|()| None)?,
                Token::Map(n) => self
                    .open(Kind::Map, n.saturating_mul(2), None, at)
                    .map(|()| None)?,
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
                return Ok(None);
            }
            self.close_top(b)?;
        }
    }

    /// Pops the top frame, checks its ext payload ended where declared, and builds it.
    fn close_top<B: Builder<Value = V>>(&mut self, b: &mut B) -> Result<(), Failure<B::Error>> {
        let Some(f) = self.frames.pop() else {
            return Ok(());
        };
        if let Some(end) = f.end {
            if self.reader.pos() != end {
                let msg = format!(
                    "ext payload declared to end at byte {end} but its array ended at byte {}",
                    self.reader.pos()
                );
                return Err(WireError::new(f.offset, msg).into());
            }
        }
        let v = b
            .container(f.kind, &mut self.values, f.start)
            .map_err(|error| Failure::Build {
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
            format!("unknown ext type {code} (this rillet reads types 1 to 12)"),
        )),
    }
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
