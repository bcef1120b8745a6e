//! Python strs straight from checkpoint UTF-8, for strings the key cache does not hold.
//!
//! `PyUnicode_DecodeUTF8` starts every string as one byte per char and copies it again each
//! time it meets a wider char, so a chat message with CJK and emoji is written two or three
//! times. Here one vectorizable pass over the (already validated) bytes finds the number of
//! chars and the widest one, so the str is allocated once at its final width and written
//! once.

use pyo3::ffi;
use pyo3::prelude::*;

/// The storage a str needs: CPython keeps every str at the narrowest width its widest char
/// fits in, and compares strs of different widths as unequal, so this must be exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    Ascii,
    Latin1,
    Ucs2,
    Ucs4,
}

impl Width {
    /// The `maxchar` that makes `PyUnicode_New` choose this width.
    fn max_char(self) -> ffi::Py_UCS4 {
        match self {
            Width::Ascii => 0x7f,
            Width::Latin1 => 0xff,
            Width::Ucs2 => 0xffff,
            Width::Ucs4 => 0x10_ffff,
        }
    }

    /// In valid UTF-8 the largest byte tells the widest char: bytes below 0x80 are ASCII;
    /// 0xC2 and 0xC3 (continuation bytes are 0x80..0xBF) lead U+0080..U+00FF; 0xC4..0xEF
    /// lead chars up to U+FFFF; 0xF0..0xF4 lead chars beyond.
    fn of_max_byte(max: u8) -> Width {
        match max {
            0x00..=0x7f => Width::Ascii,
            0x80..=0xc3 => Width::Latin1,
            0xc4..=0xef => Width::Ucs2,
            _ => Width::Ucs4,
        }
    }
}

/// Bytes per measuring block: few enough that a block's char count fits in a u8.
const BLOCK: usize = 224;

/// The number of chars of `text` and the width its widest char needs, in one pass.
pub fn measure(text: &str) -> (usize, Width) {
    let (mut chars, mut max) = (0, 0);
    for block in text.as_bytes().chunks(BLOCK) {
        // u8 lanes and no branch: LLVM turns this into SIMD compares, subtracts and maxes.
        let (n, m) = block.iter().fold((0u8, 0u8), |(n, m), &b| {
            (n + u8::from(starts_char(b)), m.max(b))
        });
        chars += usize::from(n);
        max = max.max(m);
    }
    (chars, Width::of_max_byte(max))
}

/// Whether `b` starts a char: every byte but continuation bytes (0x80..=0xBF) does.
#[inline(always)]
fn starts_char(b: u8) -> bool {
    (b as i8) >= -0x40
}

/// A code unit of a str's storage: u8, u16 or u32.
pub trait Unit: Copy {
    /// Narrows a char that the caller knows fits.
    fn narrow(c: u32) -> Self;
}

impl Unit for u8 {
    #[inline(always)]
    fn narrow(c: u32) -> Self {
        c as u8
    }
}

impl Unit for u16 {
    #[inline(always)]
    fn narrow(c: u32) -> Self {
        c as u16
    }
}

impl Unit for u32 {
    #[inline(always)]
    fn narrow(c: u32) -> Self {
        c
    }
}

/// Bytes widened per step of [`write_units`].
const STEP: usize = 16;

/// Writes the chars of `text` into `out`, one unit each. `out` must have exactly as many
/// units as `text` has chars, each wide enough for every char (as [`measure`] tells); a
/// shorter `out` panics, and the units past the chars of a longer one are unspecified.
pub fn write_units<T: Unit>(text: &str, out: &mut [T]) {
    let bytes = text.as_bytes();
    let (mut i, mut o) = (0, 0);
    while let (Some(src), Some(dst)) = (
        bytes[i..].first_chunk::<STEP>(),
        out[o..].first_chunk_mut::<STEP>(),
    ) {
        // Text is mostly ASCII between its wide chars: widen STEP bytes at once and keep
        // as many as are ASCII. The units past those are rewritten by the next chars.
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = T::narrow(u32::from(s));
        }
        let ascii = leading_ascii(src);
        i += ascii;
        o += ascii;
        // Then the wide chars up to the next ASCII byte.
        while ascii < STEP && bytes.get(i).is_some_and(|&b| b >= 0x80) {
            let (c, len) = decode_one(bytes, i);
            out[o] = T::narrow(c);
            i += len;
            o += 1;
        }
    }
    // The last few chars, one by one.
    while i < bytes.len() {
        let (c, len) = decode_one(bytes, i);
        out[o] = T::narrow(c);
        i += len;
        o += 1;
    }
}

/// How many bytes at the start of `chunk` are ASCII.
#[inline(always)]
fn leading_ascii(chunk: &[u8; STEP]) -> usize {
    (non_ascii_bits(chunk) | 1 << STEP).trailing_zeros() as usize
}

/// Bit k set when `chunk[k]` is not ASCII, in one SSE2 instruction: LLVM does not find
/// it in the portable form, which costs a dozen instructions per step.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn non_ascii_bits(chunk: &[u8; STEP]) -> u32 {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
    // SAFETY: SSE2 is part of every x86_64 CPU, and the unaligned load reads exactly the
    // STEP (16) bytes of `chunk`.
    let bits = unsafe { _mm_movemask_epi8(_mm_loadu_si128(chunk.as_ptr().cast())) };
    bits as u32
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn non_ascii_bits(chunk: &[u8; STEP]) -> u32 {
    portable_non_ascii_bits(chunk)
}

/// [`non_ascii_bits`] without SIMD: the high bit of every byte, gathered.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn portable_non_ascii_bits(chunk: &[u8; STEP]) -> u32 {
    let mut bits = 0;
    for (k, &b) in chunk.iter().enumerate() {
        bits |= u32::from(b >> 7) << k;
    }
    bits
}

/// The char that starts at `bytes[i]` and its length, in UTF-8 already known to be valid.
#[inline(always)]
fn decode_one(bytes: &[u8], i: usize) -> (u32, usize) {
    let lead = u32::from(bytes[i]);
    let cont = |k: usize| u32::from(bytes[i + k] & 0x3f);
    match lead {
        0x00..=0x7f => (lead, 1),
        0x80..=0xdf => ((lead & 0x1f) << 6 | cont(1), 2),
        0xe0..=0xef => ((lead & 0x0f) << 12 | cont(1) << 6 | cont(2), 3),
        _ => (
            (lead & 0x07) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3),
            4,
        ),
    }
}

/// A new str from strict UTF-8 `bytes`, allocated once at its final width. On invalid
/// UTF-8 it raises exactly what `PyUnicode_DecodeUTF8(..., "strict")` raises (a
/// `UnicodeDecodeError` with the position), since it is that function that raises it.
pub fn decode_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    // simdutf8 validates 16-32 bytes per step (runtime-detected SIMD) and accepts exactly
    // what std::str::from_utf8 accepts; on failure CPython reports the error.
    let Ok(text) = simdutf8::basic::from_utf8(bytes) else {
        return strict_decode(py, bytes);
    };
    let (chars, width) = measure(text);
    // SAFETY: the GIL is held (`py`); PyUnicode_New returns a new reference or NULL with an
    // exception set. `chars` <= `bytes.len()`, which fits in a Py_ssize_t.
    let mut s = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyUnicode_New(chars as ffi::Py_ssize_t, width.max_char()),
        )?
    };
    // SAFETY: `s` is a new compact str nobody else has seen, whose data holds `chars` units
    // of `width`'s size, aligned for them (or the shared empty str when `chars` is 0, which
    // gets an empty slice and is not written). `measure` and `write_units` fill every unit.
    unsafe {
        match width {
            Width::Ascii => units::<u8>(&mut s, chars).copy_from_slice(bytes),
            Width::Latin1 => write_units(text, units::<u8>(&mut s, chars)),
            Width::Ucs2 => write_units(text, units::<u16>(&mut s, chars)),
            Width::Ucs4 => write_units(text, units::<u32>(&mut s, chars)),
        }
    }
    Ok(s)
}

/// The data of a compact str as `len` units of `T`.
///
/// # Safety
/// `s` must be a compact str of `len` chars whose kind has `T`-sized units, and the slice
/// must be the only access to its data while it lives.
unsafe fn units<'a, T>(s: &'a mut Bound<'_, PyAny>, len: usize) -> &'a mut [T] {
    std::slice::from_raw_parts_mut(ffi::PyUnicode_DATA(s.as_ptr()).cast::<T>(), len)
}

/// Lets CPython's own strict decoder raise for invalid UTF-8, so the error is the same
/// `UnicodeDecodeError` as before (message, start and end).
fn strict_decode<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the GIL is held; a valid pointer and length; a new reference or NULL with an
    // exception set.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyUnicode_DecodeUTF8(
                bytes.as_ptr().cast(),
                bytes.len() as ffi::Py_ssize_t,
                c"strict".as_ptr(),
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(s: &str) -> Width {
        match s.chars().map(u32::from).max().unwrap_or(0) {
            0..=0x7f => Width::Ascii,
            0x80..=0xff => Width::Latin1,
            0x100..=0xffff => Width::Ucs2,
            _ => Width::Ucs4,
        }
    }

    /// `write_units` into units of `T`, widened back to compare.
    fn written<T: Unit + Default + Into<u32>>(s: &str, len: usize) -> Vec<u32> {
        let mut out = vec![T::default(); len];
        write_units(s, &mut out);
        out.into_iter().map(Into::into).collect()
    }

    fn check(s: &str) {
        assert_eq!(measure(s), (s.chars().count(), widest(s)), "{s:?}");
        let expected: Vec<u32> = s.chars().map(u32::from).collect();
        let n = expected.len();
        assert_eq!(written::<u32>(s, n), expected, "{s:?}");
        if widest(s) != Width::Ucs4 {
            assert_eq!(written::<u16>(s, n), expected, "{s:?}");
        }
        if matches!(widest(s), Width::Ascii | Width::Latin1) {
            assert_eq!(written::<u8>(s, n), expected, "{s:?}");
        }
    }

    #[test]
    fn every_width_and_length() {
        let pieces = [
            "a", "\u{7f}", "\u{80}", "é", "\u{ff}", "\u{100}", "检", "\u{ffff}",
        ];
        let astral = ["\u{10000}", "🎉", "\u{10ffff}"];
        for p in pieces.iter().chain(&astral) {
            check(p);
            // Around the 16-byte ASCII step and the 224-byte measuring block.
            for n in [1, 7, 8, 15, 16, 17, 31, 63, 224, 225, 500] {
                check(&"x".repeat(n));
                check(&format!("{}{p}", "x".repeat(n)));
                check(&format!("{p}{}", "x".repeat(n)));
                check(&p.repeat(n));
                check(&format!("{}{p}{}", "ab".repeat(n), "c".repeat(n % 9)));
            }
        }
        check("");
        check("the agent 检索 结果 🎉 ✓ weather forecast invoice refund ünïcödé");
    }

    #[test]
    fn non_ascii_bits_match_the_portable_form() {
        let mut chunk = [b'a'; STEP];
        for k in 0..STEP {
            chunk[(k * 7) % STEP] ^= 0x80 | k as u8;
            assert_eq!(non_ascii_bits(&chunk), portable_non_ascii_bits(&chunk));
            assert_eq!(
                leading_ascii(&chunk),
                chunk.iter().take_while(|b| b.is_ascii()).count()
            );
        }
    }

    #[test]
    fn width_comes_from_the_largest_byte() {
        assert_eq!(Width::of_max_byte(0x7f), Width::Ascii);
        assert_eq!(Width::of_max_byte(0xbf), Width::Latin1);
        assert_eq!(Width::of_max_byte(0xc3), Width::Latin1);
        assert_eq!(Width::of_max_byte(0xc4), Width::Ucs2);
        assert_eq!(Width::of_max_byte(0xef), Width::Ucs2);
        assert_eq!(Width::of_max_byte(0xf0), Width::Ucs4);
        assert_eq!(Width::of_max_byte(0xf4), Width::Ucs4);
    }
}
