//! The checkpoint codec's pure-Rust core: MessagePack with a few extension types inside a
//! versioned envelope. No PyO3 types live here, so `cargo test` and the fuzzer (which compiles
//! these files on their own, see `fuzz/`) exercise exactly the code the Python bindings use.
//!
//! * [`wire`] writes msgpack primitives and reads one token at a time, checking every
//!   declared length against the bytes that remain.
//! * [`decode`] drives the reader with an explicit stack (no recursion) under [`Limits`] and
//!   hands tokens to a [`decode::Builder`], which makes the values (Python objects in
//!   `py/codec.rs`, a plain [`value::Value`] tree in tests and in the fuzzer).
//!
//! * [`compress`] wraps a format-2 body in an LZ4 block (format 3), and checks a compressed
//!   body's declared size before it allocates.
//!
//! The wire format is specified in `docs/checkpoint-format.md`; the constants below are part
//! of it and must never change meaning.

pub mod compress;
pub mod decode;
pub mod limits;
pub mod repeats;
pub mod value;
pub mod wire;

#[cfg(test)]
mod tests;

pub use limits::Limits;

/// First element of the envelope `[MAGIC, FORMAT_VERSION, body]`.
pub const MAGIC: &str = "rillet-ckpt";
/// The format version this build writes by default.
pub const FORMAT_VERSION: u8 = 2;
/// The format written on request (`compress=True`): a format-2 body compressed with LZ4.
/// The newest format this build reads.
pub const COMPRESSED_FORMAT_VERSION: u8 = 3;
/// The oldest format version this build reads and can still write on request.
pub const OLDEST_FORMAT_VERSION: u8 = 1;

/// Application extension type codes (msgpack ext types 0..=127). Never reuse a code.
pub mod ext {
    /// Payload: an array of the items.
    pub const TUPLE: i8 = 1;
    /// Payload: a sign byte (0 positive, 1 negative) then the big-endian magnitude.
    pub const BIGINT: i8 = 2;
    /// Payload: an array of the elements.
    pub const SET: i8 = 3;
    /// Payload: an array of the elements.
    pub const FROZENSET: i8 = 4;
    /// Payload: `[name, version, state]`.
    pub const OBJECT: i8 = 5;
    /// Payload: the string as UTF-8 that may encode lone surrogates (Python "surrogatepass").
    pub const SURROGATE_STR: i8 = 6;
    /// Payload: `[year, month, day, hour, minute, second, microsecond, fold, tz]`.
    pub const DATETIME: i8 = 7;
    /// Payload: `[year, month, day]`.
    pub const DATE: i8 = 8;
    /// Payload: `[hour, minute, second, microsecond, fold, tz]`.
    pub const TIME: i8 = 9;
    /// Payload: `[days, seconds, microseconds]`, normalised as Python stores them.
    pub const TIMEDELTA: i8 = 10;
    /// Payload: the 16 bytes of the UUID, big-endian.
    pub const UUID: i8 = 11;
    /// Payload: the ASCII text of `str(decimal)`.
    pub const DECIMAL: i8 = 12;
    /// Format 2. Payload: a str as strict UTF-8; appends it to the string table.
    pub const STR_DEF: i8 = 13;
    /// Format 2. Payload: a 1, 2 or 4-byte big-endian index into the string table.
    pub const STR_REF: i8 = 14;
    /// Format 2, only as the first element of an array (a record). Payload: an array of
    /// distinct strs, the record's keys; appends them to the shape table.
    pub const SHAPE_DEF: i8 = 15;
    /// Format 2, only as the first element of an array (a record). Payload: a 1, 2 or
    /// 4-byte big-endian index into the shape table.
    pub const SHAPE_REF: i8 = 16;
}
