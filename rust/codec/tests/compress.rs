//! Format 3: the LZ4 framing of a format-2 body, and every way a compressed body can be
//! malformed.

use super::super::compress::{compress_body, decompress_payload, HEADER_LEN, LZ4_BLOCK, MAX_RATIO};
use super::super::value::{encode_version, Value};
use super::super::Limits;
use super::{dec, dec_with, repetitive, sample};

/// The envelope head `["rillet-ckpt", version, ` (14 bytes).
fn head(version: u8) -> Vec<u8> {
    let mut v = vec![0x93, 0xab];
    v.extend_from_slice(b"rillet-ckpt");
    v.push(version);
    v
}

/// A format-3 checkpoint with the given payload (wrapped in a bin 32).
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut v = head(3);
    v.push(0xc6);
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// A payload: algorithm, declared size, block.
fn payload(algorithm: u8, size: u32, block: &[u8]) -> Vec<u8> {
    let mut v = vec![algorithm];
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(block);
    v
}

fn lz4(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0; lz4_flex::block::get_maximum_output_size(body.len())];
    let n = lz4_flex::block::compress_into(body, &mut out).unwrap();
    out.truncate(n);
    out
}

fn long_list(n: usize) -> Value {
    let row = |i: usize| {
        Value::Map(vec![
            (Value::Str("role".into()), Value::Str("assistant".into())),
            (
                Value::Str("content".into()),
                Value::Str(format!("message {}", i % 7)),
            ),
        ])
    };
    Value::Seq(super::Kind::List, (0..n).map(row).collect())
}

#[test]
fn round_trips_and_is_a_compressed_format_2_body() {
    for v in [sample(), repetitive(), long_list(1000), Value::Nil] {
        let plain = encode_version(&v, 2).unwrap();
        let packed = encode_version(&v, 3).unwrap();
        assert_eq!(dec(&packed).unwrap(), v);
        assert_eq!(packed[..14], head(3)[..]);
        // The payload is one bin in its shortest form; its header declares the body's size.
        let (payload_at, payload_len) = match packed[14] {
            0xc4 => (16, packed[15] as usize),
            0xc5 => (17, u16::from_be_bytes([packed[15], packed[16]]) as usize),
            other => panic!("expected bin 8 or bin 16, found {other:#x}"),
        };
        assert_eq!(payload_at + payload_len, packed.len());
        let body = &plain[14..];
        assert_eq!(packed[payload_at], LZ4_BLOCK);
        let size = u32::from_be_bytes(packed[payload_at + 1..payload_at + 5].try_into().unwrap());
        assert_eq!(size as usize, body.len());
        let block = &packed[payload_at + HEADER_LEN..];
        let mut out = vec![0; body.len()];
        assert_eq!(
            lz4_flex::block::decompress_into(block, &mut out).unwrap(),
            body.len()
        );
        assert_eq!(out, body);
    }
}

#[test]
fn repetitive_data_gets_much_smaller() {
    let v = long_list(1000);
    let plain = encode_version(&v, 2).unwrap().len();
    let packed = encode_version(&v, 3).unwrap().len();
    assert!(
        packed * 4 < plain,
        "{packed} bytes compressed vs {plain} plain"
    );
}

#[test]
fn the_most_compressible_body_still_decodes() {
    // A long run of one byte is LZ4's best case: it must stay within MAX_RATIO.
    let body = vec![0xc0; 4 << 20];
    let block = lz4(&body);
    assert!(body.len() <= block.len() * MAX_RATIO);
    let got = decompress_payload(
        &payload(1, body.len() as u32, &block),
        0,
        &Limits::default(),
    );
    assert_eq!(got.unwrap(), body);
    // compress_body writes the same framing for any body, even one that is not msgpack.
    assert!(compress_body(&body).unwrap().len() < body.len() / 100);
}

#[test]
fn malformed_compressed_bodies_are_errors_with_offsets() {
    let body = encode_version(&sample(), 2).unwrap()[14..].to_vec();
    let block = lz4(&body);
    let size = body.len() as u32;
    // One literal "x", then a match at offset 0 or 5: neither can be resolved.
    let offset_zero = [0x10, b'x', 0x00, 0x00];
    let offset_far = [0x10, b'x', 0x05, 0x00];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (framed(&[]), "truncated compressed body: 0 bytes, shorter than its 5-byte header (algorithm, decompressed size) (at byte 19)"),
        (framed(&[1, 0, 0]), "shorter than its 5-byte header"),
        (
            framed(&payload(2, size, &block)),
            "unknown compression algorithm 2 (this rillet reads 1, LZ4 block); the checkpoint \
             was written by a newer rillet: upgrade rillet (at byte 19)",
        ),
        (
            framed(&payload(1, size + 1, &block)),
            "decompresses to ",
        ),
        (
            framed(&payload(1, size - 1, &block)),
            "decompresses to more than the declared",
        ),
        (
            framed(&payload(1, size, &block[..block.len() - 1])),
            "corrupt or truncated LZ4 block (a literal run goes past the end of the block) (at byte 24)",
        ),
        (
            framed(&payload(1, 10, &offset_zero)),
            "corrupt or truncated LZ4 block (a match has offset 0) (at byte 24)",
        ),
        (
            framed(&payload(1, 10, &offset_far)),
            "(a match refers before the start of the data) (at byte 24)",
        ),
        (
            framed(&payload(1, u32::MAX, &block)),
            "declares 4294967295 decompressed bytes, which exceeds max_size=1073741824 (at byte 20)",
        ),
        ({ let mut v = framed(&payload(1, size, &block)); v.push(0xc0); v }, "1 trailing bytes"),
        ({ let mut v = head(3); v.push(0x90); v }, "expected the compressed body of a format-3 checkpoint"),
        (
            framed(&payload(1, size, &block))[..30].to_vec(),
            "truncated compressed body: expected bin data of",
        ),
        (head(4), "checkpoint format version 4 is newer than this rillet reads (3); upgrade rillet"),
    ];
    for (input, expected) in &cases {
        let err = dec(input).expect_err(expected);
        assert!(
            err.contains(expected),
            "{err:?} does not contain {expected:?}"
        );
    }
    let short = framed(&payload(1, size + 1, &block));
    assert!(dec(&short).unwrap_err().contains(&format!(
        "decompresses to {size} bytes, not the declared {}",
        size + 1
    )));
}

#[test]
fn a_declared_size_is_checked_before_allocating() {
    // No limit on size: only the ratio check stands between 15 bytes and a 4 GiB buffer.
    let unlimited = Limits {
        max_size: usize::MAX,
        ..Limits::default()
    };
    let bomb = framed(&payload(1, u32::MAX, &[0x00; 10]));
    let err = dec_with(&bomb, &unlimited).unwrap_err();
    assert!(
        err.contains("more than its LZ4 block of 10 bytes can hold"),
        "{err}"
    );
    // max_size bounds the decompressed size too, not only the input.
    let v = long_list(1000);
    let packed = encode_version(&v, 3).unwrap();
    let plain = encode_version(&v, 2).unwrap().len() - 14;
    let tight = Limits {
        max_size: plain - 1,
        ..Limits::default()
    };
    assert!(packed.len() < tight.max_size);
    let err = dec_with(&packed, &tight).unwrap_err();
    assert!(
        err.contains(&format!(
            "declares {plain} decompressed bytes, which exceeds max_size"
        )),
        "{err}"
    );
    let exact = Limits {
        max_size: plain,
        ..Limits::default()
    };
    assert_eq!(dec_with(&packed, &exact).unwrap(), v);
}

#[test]
fn limits_and_body_errors_apply_to_the_decompressed_body() {
    let packed = encode_version(&long_list(100), 3).unwrap();
    let few = Limits {
        max_items: 50,
        ..Limits::default()
    };
    let err = dec_with(&packed, &few).unwrap_err();
    assert!(
        err.contains("more than max_items=50 values (at byte"),
        "{err}"
    );
    assert!(err.ends_with("of the decompressed body)"), "{err}");
    let shallow = Limits {
        max_depth: 1,
        ..Limits::default()
    };
    let err = dec_with(&packed, &shallow).unwrap_err();
    assert!(err.ends_with("of the decompressed body)"), "{err}");
    // A body that is not valid msgpack: the offset counts from the body's start.
    let bad = compress_body(&[0x92, 0x01, 0xc1]).unwrap();
    let err = dec(&bad).unwrap_err();
    assert!(
        err.ends_with("(at byte 2 of the decompressed body)"),
        "{err}"
    );
    let trailing = compress_body(&[0xc0, 0xc0]).unwrap();
    let err = dec(&trailing).unwrap_err();
    assert!(
        err.contains("1 trailing bytes (at byte 1 of the decompressed body)"),
        "{err}"
    );
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = encode_version(&repetitive(), 3).unwrap();
    for n in 0..bytes.len() {
        assert!(dec(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
    }
}
