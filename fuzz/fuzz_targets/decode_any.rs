//! Arbitrary bytes through the checkpoint decoder: it must return Ok or Err, never panic,
//! and whatever decodes must re-encode to bytes that decode to the same value.
//!
//! The codec core is compiled straight from the main crate's sources, so this crate needs
//! neither PyO3 nor a Python interpreter.
#![no_main]

#[path = "../../rust/codec/mod.rs"]
#[allow(dead_code)]
mod codec;

use codec::decode::decode;
use codec::value::{encode_version, ValueBuilder};
use codec::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_depth: 64, ..Limits::default() };
    // Also try the raw bytes as a body of each format, so the fuzzer need not rediscover
    // the envelope.
    let framed = |version: u8| {
        let mut v = b"\x93\xabrillet-ckpt".to_vec();
        v.push(version);
        v.extend_from_slice(data);
        v
    };
    // Format 3 with the raw bytes as its LZ4 block (a declared size the block could hold).
    let compressed = || {
        let mut v = b"\x93\xabrillet-ckpt\x03\xc6".to_vec();
        v.extend_from_slice(&(data.len() as u32 + 5).to_be_bytes());
        v.push(1);
        v.extend_from_slice(&(data.len() as u32).saturating_mul(4).to_be_bytes());
        v.extend_from_slice(data);
        v
    };
    for input in [data.to_vec(), framed(1), framed(2), compressed()] {
        if let Ok(v) = decode(&input, &limits, &mut ValueBuilder) {
            for version in [1, 2, 3] {
                let again = encode_version(&v, version).expect("a decoded value re-encodes");
                let back = decode(&again, &limits, &mut ValueBuilder).ok().expect("re-encoded value decodes");
                assert_eq!(back, v);
            }
        }
    }
});
