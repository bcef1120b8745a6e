//! MessagePack primitives: a [`Writer`] that appends to a reusable buffer and a [`Reader`]
//! that yields one [`Token`] at a time from untrusted bytes.
//!
//! The reader never allocates and never trusts a declared length: a str, bin or ext payload
//! must fit in the bytes that remain, and an array or map may not declare more elements than
//! there are bytes left (each element takes at least one byte).

use std::fmt;

use super::MAGIC;

/// A decoding failure: where it happened and what was expected there. Boxed, because it is
/// rare and the reader's `Result`s should stay small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(Box<(At, String)>);

impl WireError {
    pub fn new(offset: usize, message: impl Into<String>) -> Self {
        WireError(Box::new((At::input(offset), message.into())))
    }

    /// The same error, found in the decompressed body of a format-3 checkpoint: its offset
    /// counts from the start of that body.
    pub fn in_decompressed_body(mut self) -> Self {
        self.0 .0.decompressed = true;
        self
    }

    pub fn offset(&self) -> usize {
        self.0 .0.offset
    }

    /// Where the error is, for messages: `12`, or `12 of the decompressed body`.
    pub fn at(&self) -> At {
        self.0 .0
    }

    pub fn message(&self) -> &str {
        &self.0 .1
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message(), self.at())
    }
}

/// A byte offset in the input, or in the decompressed body of a format-3 checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub offset: usize,
    pub decompressed: bool,
}

impl At {
    pub fn input(offset: usize) -> Self {
        At {
            offset,
            decompressed: false,
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.decompressed {
            write!(f, "{} of the decompressed body", self.offset)
        } else {
            write!(f, "{}", self.offset)
        }
    }
}

/// A length that msgpack cannot represent (over 4 GiB - 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong(pub usize);

/// Appends msgpack to a buffer, always in the shortest form.
#[derive(Debug, Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

/// Bytes reserved for an ext header whose payload length is not known yet (`ext 32`).
const EXT_RESERVE: usize = 6;

impl Writer {
    pub fn with_capacity(cap: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(cap),
        }
    }

    /// Writes the envelope head `[MAGIC, version, ` — the body must follow.
    pub fn envelope(&mut self, version: u8) {
        self.buf.push(0x93);
        self.buf.push(0xa0 | MAGIC.len() as u8);
        self.buf.extend_from_slice(MAGIC.as_bytes());
        self.buf.push(version);
    }

    /// A reference into a format-2 table: a fixext of 1, 2 or 4 big-endian index bytes.
    #[inline]
    pub fn index_ref(&mut self, code: i8, index: u32) {
        if index <= u8::MAX as u32 {
            self.buf.extend_from_slice(&[0xd4, code as u8, index as u8]);
        } else if index <= u16::MAX as u32 {
            self.buf.extend_from_slice(&[0xd5, code as u8]);
            self.buf.extend_from_slice(&(index as u16).to_be_bytes());
        } else {
            self.buf.extend_from_slice(&[0xd6, code as u8]);
            self.buf.extend_from_slice(&index.to_be_bytes());
        }
    }

    #[inline]
    pub fn nil(&mut self) {
        self.buf.push(0xc0);
    }

    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.buf.push(if v { 0xc3 } else { 0xc2 });
    }

    #[inline]
    pub fn uint(&mut self, v: u64) {
        if v < 0x80 {
            self.buf.push(v as u8);
        } else if v <= u8::MAX as u64 {
            self.buf.extend_from_slice(&[0xcc, v as u8]);
        } else if v <= u16::MAX as u64 {
            self.buf.push(0xcd);
            self.buf.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v <= u32::MAX as u64 {
            self.buf.push(0xce);
            self.buf.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            self.buf.push(0xcf);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    #[inline]
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            self.uint(v as u64);
        } else if v >= -32 {
            self.buf.push(v as u8);
        } else if v >= i8::MIN as i64 {
            self.buf.extend_from_slice(&[0xd0, v as u8]);
        } else if v >= i16::MIN as i64 {
            self.buf.push(0xd1);
            self.buf.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= i32::MIN as i64 {
            self.buf.push(0xd2);
            self.buf.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.buf.push(0xd3);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Always float 64, so every bit (NaN payloads, -0.0) survives.
    #[inline]
    pub fn float(&mut self, v: f64) {
        self.buf.push(0xcb);
        self.buf.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    #[inline]
    pub fn str(&mut self, s: &[u8]) -> Result<(), TooLong> {
        let n = s.len();
        if n < 32 {
            self.buf.push(0xa0 | n as u8);
        } else {
            self.sized_head(n, [0xd9, 0xda, 0xdb])?;
        }
        self.buf.extend_from_slice(s);
        Ok(())
    }

    pub fn bin(&mut self, b: &[u8]) -> Result<(), TooLong> {
        self.bin_head(b.len())?;
        self.buf.extend_from_slice(b);
        Ok(())
    }

    /// The head of a bin of `n` bytes, whose data the caller appends.
    pub fn bin_head(&mut self, n: usize) -> Result<(), TooLong> {
        self.sized_head(n, [0xc4, 0xc5, 0xc6])
    }

    #[inline]
    pub fn array(&mut self, n: usize) -> Result<(), TooLong> {
        if n < 16 {
            self.buf.push(0x90 | n as u8);
            Ok(())
        } else {
            self.wide_head(n, [0xdc, 0xdd])
        }
    }

    #[inline]
    pub fn map(&mut self, n: usize) -> Result<(), TooLong> {
        if n < 16 {
            self.buf.push(0x80 | n as u8);
            Ok(())
        } else {
            self.wide_head(n, [0xde, 0xdf])
        }
    }

    /// Writes an ext value whose payload is already known.
    pub fn ext(&mut self, code: i8, payload: &[u8]) -> Result<(), TooLong> {
        self.ext_head(code, payload.len())?;
        self.buf.extend_from_slice(payload);
        Ok(())
    }

    /// Starts an ext value whose payload is written next; returns the mark for [`Self::ext_end`].
    pub fn ext_begin(&mut self) -> usize {
        let mark = self.buf.len();
        self.buf.extend_from_slice(&[0; EXT_RESERVE]);
        mark
    }

    /// Finishes an ext value: writes the shortest header and moves the payload next to it.
    pub fn ext_end(&mut self, mark: usize, code: i8) -> Result<(), TooLong> {
        let start = mark + EXT_RESERVE;
        let len = self.buf.len() - start;
        let mut head = Writer::with_capacity(EXT_RESERVE);
        head.ext_head(code, len)?;
        let h = head.buf.len();
        self.buf[mark..mark + h].copy_from_slice(&head.buf);
        if h < EXT_RESERVE {
            self.buf.copy_within(start.., mark + h);
            self.buf.truncate(mark + h + len);
        }
        Ok(())
    }

    fn ext_head(&mut self, code: i8, len: usize) -> Result<(), TooLong> {
        let fixed = match len {
            1 => Some(0xd4),
            2 => Some(0xd5),
            4 => Some(0xd6),
            8 => Some(0xd7),
            16 => Some(0xd8),
            _ => None,
        };
        match fixed {
            Some(marker) => self.buf.push(marker),
            None => self.sized_head(len, [0xc7, 0xc8, 0xc9])?,
        }
        self.buf.push(code as u8);
        Ok(())
    }

    /// A str/bin/ext head with an 8, 16 or 32-bit length.
    fn sized_head(&mut self, n: usize, markers: [u8; 3]) -> Result<(), TooLong> {
        if n <= u8::MAX as usize {
            self.buf.extend_from_slice(&[markers[0], n as u8]);
            Ok(())
        } else {
            self.wide_head(n, [markers[1], markers[2]])
        }
    }

    /// A head with a 16 or 32-bit length: an array's or map's, or a long str/bin/ext's.
    fn wide_head(&mut self, n: usize, markers: [u8; 2]) -> Result<(), TooLong> {
        if n <= u16::MAX as usize {
            self.buf.push(markers[0]);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= u32::MAX as usize {
            self.buf.push(markers[1]);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            return Err(TooLong(n));
        }
        Ok(())
    }
}

/// One msgpack item as read from the input. Containers are only announced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Token<'a> {
    Nil,
    Bool(bool),
    /// Every integer that fits in i64.
    Int(i64),
    /// Integers above `i64::MAX`.
    UInt(u64),
    Float(f64),
    /// The raw bytes of a str. Builders validate them (strict UTF-8) while making the
    /// string, so the bytes are scanned once, not twice.
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Array(usize),
    Map(usize),
    /// An ext value; `start` is the offset of its payload in the input.
    Ext {
        code: i8,
        start: usize,
        len: usize,
    },
}

/// Reads tokens from a byte slice. Every method checks bounds and returns errors, never panics.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to an offset inside the input (used to step into an ext payload).
    pub fn seek(&mut self, pos: usize) {
        debug_assert!(pos <= self.buf.len());
        self.pos = pos.min(self.buf.len());
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn bytes(&self, start: usize, len: usize) -> &'a [u8] {
        &self.buf[start..start + len]
    }

    #[inline(always)]
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::new(
                self.pos,
                format!(
                    "expected {what} of {n} bytes, but only {} remain",
                    self.remaining()
                ),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline(always)]
    fn be<const N: usize>(&mut self, what: &str) -> Result<[u8; N], WireError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline(always)]
    fn len_field(&mut self, width: u8, what: &str) -> Result<usize, WireError> {
        Ok(match width {
            1 => self.be::<1>(what)?[0] as usize,
            2 => u16::from_be_bytes(self.be::<2>(what)?) as usize,
            _ => u32::from_be_bytes(self.be::<4>(what)?) as usize,
        })
    }

    /// Reads a fixext 1 of type `code` if one comes next, returning its payload byte.
    #[inline(always)]
    pub fn fixext1(&mut self, code: i8) -> Option<u8> {
        match self.buf.get(self.pos..self.pos + 3) {
            Some(&[0xd4, c, payload]) if c == code as u8 => {
                self.pos += 3;
                Some(payload)
            }
            _ => None,
        }
    }

    /// Reads the next token. On error nothing sensible remains to be read.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // fallible, with a position: not an Iterator
    pub fn next(&mut self) -> Result<Token<'a>, WireError> {
        let at = self.pos;
        let marker = self.be::<1>("a msgpack value")?[0];
        Ok(match marker {
            0x00..=0x7f => Token::Int(marker as i64),
            0x80..=0x8f => self.elements(at, (marker & 0x0f) as usize, true)?,
            0x90..=0x9f => self.elements(at, (marker & 0x0f) as usize, false)?,
            0xa0..=0xbf => self.text((marker & 0x1f) as usize)?,
            0xc0 => Token::Nil,
            0xc2 => Token::Bool(false),
            0xc3 => Token::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len_field(1 << (marker - 0xc4), "a bin length")?;
                Token::Bin(self.take(n, "bin data")?)
            }
            0xc7..=0xc9 => {
                let n = self.len_field(1 << (marker - 0xc7), "an ext length")?;
                self.ext_payload(n)?
            }
            0xca => Token::Float(f32::from_bits(u32::from_be_bytes(self.be("a float 32")?)) as f64),
            0xcb => Token::Float(f64::from_bits(u64::from_be_bytes(self.be("a float 64")?))),
            0xcc => Token::Int(self.be::<1>("a uint 8")?[0] as i64),
            0xcd => Token::Int(u16::from_be_bytes(self.be("a uint 16")?) as i64),
            0xce => Token::Int(u32::from_be_bytes(self.be("a uint 32")?) as i64),
            0xcf => {
                let v = u64::from_be_bytes(self.be("a uint 64")?);
                i64::try_from(v).map_or(Token::UInt(v), Token::Int)
            }
            0xd0 => Token::Int(self.be::<1>("an int 8")?[0] as i8 as i64),
            0xd1 => Token::Int(i16::from_be_bytes(self.be("an int 16")?) as i64),
            0xd2 => Token::Int(i32::from_be_bytes(self.be("an int 32")?) as i64),
            0xd3 => Token::Int(i64::from_be_bytes(self.be("an int 64")?)),
            0xd4..=0xd8 => self.ext_payload(1 << (marker - 0xd4))?,
            0xd9..=0xdb => {
                let n = self.len_field(1 << (marker - 0xd9), "a str length")?;
                self.text(n)?
            }
            0xdc | 0xdd => {
                let n = self.len_field(if marker == 0xdc { 2 } else { 4 }, "an array length")?;
                self.elements(at, n, false)?
            }
            0xde | 0xdf => {
                let n = self.len_field(if marker == 0xde { 2 } else { 4 }, "a map length")?;
                self.elements(at, n, true)?
            }
            0xe0..=0xff => Token::Int(marker as i8 as i64),
            0xc1 => {
                return Err(WireError::new(
                    at,
                    "expected a msgpack value, found the never-used byte 0xc1",
                ))
            }
        })
    }

    /// An array or map head: refuses counts that the remaining bytes cannot hold.
    #[inline(always)]
    fn elements(&self, at: usize, n: usize, map: bool) -> Result<Token<'a>, WireError> {
        let need = if map { n.saturating_mul(2) } else { n };
        if need > self.remaining() {
            let what = if map { "map" } else { "array" };
            return Err(WireError::new(
                at,
                format!(
                    "{what} declares {n} elements but only {} bytes remain",
                    self.remaining()
                ),
            ));
        }
        Ok(if map { Token::Map(n) } else { Token::Array(n) })
    }

    #[inline(always)]
    fn text(&mut self, n: usize) -> Result<Token<'a>, WireError> {
        Ok(Token::Str(self.take(n, "str data")?))
    }

    fn ext_payload(&mut self, len: usize) -> Result<Token<'a>, WireError> {
        let code = self.be::<1>("an ext type code")?[0] as i8;
        let start = self.pos;
        self.take(len, "ext payload")?;
        Ok(Token::Ext { code, start, len })
    }
}

/// Checks UTF-8 that may encode surrogate code points (U+D800..U+DFFF), which Python's
/// "surrogatepass" error handler produces for lone surrogates. Everything else is strict.
pub fn is_utf8_with_surrogates(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let n = match c {
            0x00..=0x7f => 1,
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => return false,
        };
        if i + n > b.len() || !b[i + 1..i + n].iter().all(|&x| (0x80..=0xbf).contains(&x)) {
            return false;
        }
        let second = if n > 1 { b[i + 1] } else { 0x80 };
        let ok = match c {
            0xe0 => second >= 0xa0,
            0xf0 => second >= 0x90,
            0xf4 => second <= 0x8f,
            _ => true,
        };
        if !ok {
            return false;
        }
        i += n;
    }
    true
}
