//! Format 3: a format-2 body compressed with LZ4, so that a large checkpoint takes a third of
//! the bytes for well under a millisecond per 300 kB.
//!
//! The envelope is `["rillet-ckpt", 3, payload]` where `payload` is one msgpack bin:
//!
//! ```text
//! offset 0   algorithm          u8, 1 = LZ4 block (the only one so far)
//! offset 1   decompressed size  u32, big-endian: the length of the format-2 body
//! offset 5   the LZ4 block      (raw block format: no frame, no checksum)
//! ```
//!
//! The decompressed bytes are exactly the body of a format-2 checkpoint (what follows
//! `["rillet-ckpt", 2, ` in it). Reading checks the declared size against `max_size` and
//! against what a block of that length can hold before allocating anything, so a tiny input
//! cannot make the reader allocate much (a decompression bomb).
//!
//! The compressor is `lz4_flex` with its fast (unsafe) encoder and its bounds-checked decoder
//! (`checked-decode`: a corrupt or hostile block is an error, never a read or write out of
//! bounds; tests/data/test_codec_compress.py and the fuzz target feed it such blocks). Its
//! safe-only build cost 4.1 M instructions to compress the 300 kB checkpoint of
//! benches/bench_checkpoint_store.py and 2.9 M to decompress it, against 3.1 M and 1.5 M.

use lz4_flex::block::{compress_into, decompress_into, get_maximum_output_size, DecompressError};

use super::wire::{Reader, Token, TooLong, WireError, Writer};
use super::{Limits, COMPRESSED_FORMAT_VERSION, FORMAT_VERSION, MAGIC};

/// The algorithm byte of an LZ4 block (the only algorithm so far).
pub const LZ4_BLOCK: u8 = 1;
/// Bytes before the compressed block: the algorithm byte and the 4-byte decompressed size.
pub const HEADER_LEN: usize = 5;
/// The most bytes one byte of an LZ4 block can decompress to. A match of length
/// `4 + 15 + 255 * k` costs at least `3 + k` bytes of block (token, 2-byte offset, `k` length
/// bytes), and a literal costs one byte: no block of `n` bytes decompresses to more than
/// `255 * n`.
pub const MAX_RATIO: usize = 255;

/// Length of the envelope head `[MAGIC, version, ` that every checkpoint starts with.
pub const ENVELOPE_HEAD_LEN: usize = 3 + MAGIC.len();

/// True when `input` starts with the head of a format-3 (compressed) envelope.
pub fn is_compressed(input: &[u8]) -> bool {
    let mut w = Writer::default();
    w.envelope(COMPRESSED_FORMAT_VERSION);
    input.starts_with(&w.buf)
}

/// Compresses a whole format-2 checkpoint (envelope and body, as the encoder wrote it) into a
/// format-3 checkpoint. Fails only for a body over 4 GiB - 1, whose size the header cannot
/// hold.
pub fn compress_checkpoint(format2: &[u8]) -> Result<Vec<u8>, TooLong> {
    let mut head = Writer::default();
    head.envelope(FORMAT_VERSION);
    assert!(
        format2.starts_with(&head.buf),
        "compress_checkpoint takes a format-2 checkpoint"
    );
    compress_body(&format2[head.buf.len()..])
}

/// Writes the format-3 checkpoint whose decompressed body is `body`, a format-2 body.
pub fn compress_body(body: &[u8]) -> Result<Vec<u8>, TooLong> {
    let size = u32::try_from(body.len()).map_err(|_| TooLong(body.len()))?;
    let bound = get_maximum_output_size(body.len());
    let mut w = Writer::with_capacity(ENVELOPE_HEAD_LEN + 5 + HEADER_LEN + bound);
    w.envelope(COMPRESSED_FORMAT_VERSION);
    // The bin head's length is not known before compressing: reserve the longest (bin 32),
    // compress in place, then close the gap if a shorter head fits.
    let bin_at = w.buf.len();
    let block_at = bin_at + 5 + HEADER_LEN;
    w.buf.resize(block_at + bound, 0);
    let written = compress_into(body, &mut w.buf[block_at..])
        .expect("an LZ4 block fits in get_maximum_output_size bytes");
    w.buf.truncate(block_at + written);
    let payload_len = HEADER_LEN + written;
    let mut head = Writer::default();
    head.bin_head(payload_len)?;
    head.buf.push(LZ4_BLOCK);
    head.buf.extend_from_slice(&size.to_be_bytes());
    let gap = 5 + HEADER_LEN - head.buf.len();
    w.buf.copy_within(block_at.., block_at - gap);
    w.buf.truncate(w.buf.len() - gap);
    w.buf[bin_at..bin_at + head.buf.len()].copy_from_slice(&head.buf);
    Ok(w.buf)
}

/// Reads the rest of a format-3 envelope after its version (the bin payload, then the end
/// of the input) and returns the decompressed format-2 body. Every error names the byte
/// offset in `input` where the problem is.
pub fn read_compressed_body(r: &mut Reader<'_>, limits: &Limits) -> Result<Vec<u8>, WireError> {
    let at = r.pos();
    let payload = match r.next() {
        Ok(Token::Bin(payload)) => payload,
        Ok(_) => {
            return Err(WireError::new(
                at,
                "expected the compressed body of a format-3 checkpoint (a msgpack bin)",
            ))
        }
        Err(e) => {
            let msg = format!("truncated compressed body: {}", e.message());
            return Err(WireError::new(e.offset(), msg));
        }
    };
    let payload_at = r.pos() - payload.len();
    if r.remaining() > 0 {
        let msg = format!(
            "expected the end of the checkpoint, found {} trailing bytes",
            r.remaining()
        );
        return Err(WireError::new(r.pos(), msg));
    }
    decompress_payload(payload, payload_at, limits)
}

/// Decompresses a format-3 payload found at byte `at` of the input.
pub fn decompress_payload(
    payload: &[u8],
    at: usize,
    limits: &Limits,
) -> Result<Vec<u8>, WireError> {
    if payload.len() < HEADER_LEN {
        let msg = format!(
            "truncated compressed body: {} bytes, shorter than its {HEADER_LEN}-byte header \
             (algorithm, decompressed size)",
            payload.len()
        );
        return Err(WireError::new(at, msg));
    }
    let algorithm = payload[0];
    if algorithm != LZ4_BLOCK {
        let msg = format!(
            "unknown compression algorithm {algorithm} (this rillet reads {LZ4_BLOCK}, LZ4 \
             block); the checkpoint was written by a newer rillet: upgrade rillet"
        );
        return Err(WireError::new(at, msg));
    }
    let size = u32::from_be_bytes([payload[1], payload[2], payload[3], payload[4]]) as usize;
    let block = &payload[HEADER_LEN..];
    let block_at = at + HEADER_LEN;
    if size > limits.max_size {
        let msg = format!(
            "compressed body declares {size} decompressed bytes, which exceeds max_size={}",
            limits.max_size
        );
        return Err(WireError::new(at + 1, msg));
    }
    if size > block.len().saturating_mul(MAX_RATIO) {
        let msg = format!(
            "compressed body declares {size} decompressed bytes, more than its LZ4 block of \
             {} bytes can hold (corrupt or forged size)",
            block.len()
        );
        return Err(WireError::new(at + 1, msg));
    }
    let mut body = vec![0u8; size];
    match decompress_into(block, &mut body) {
        Ok(n) if n == size => Ok(body),
        Ok(n) => Err(WireError::new(
            block_at,
            format!("the LZ4 block decompresses to {n} bytes, not the declared {size}"),
        )),
        Err(DecompressError::OutputTooSmall { .. }) => Err(WireError::new(
            block_at,
            format!("the LZ4 block decompresses to more than the declared {size} bytes"),
        )),
        Err(e) => Err(WireError::new(
            block_at,
            format!("corrupt or truncated LZ4 block ({})", lz4_problem(&e)),
        )),
    }
}

fn lz4_problem(e: &DecompressError) -> &'static str {
    match e {
        DecompressError::OutputTooSmall { .. } => "output too small",
        DecompressError::LiteralOutOfBounds => "a literal run goes past the end of the block",
        DecompressError::ExpectedAnotherByte => "the block ends in the middle of a sequence",
        DecompressError::OffsetZero => "a match has offset 0",
        DecompressError::OffsetOutOfBounds => "a match refers before the start of the data",
        _ => "invalid block",
    }
}
