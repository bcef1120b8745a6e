//! Wire-level tests of the decoder over the plain [`Value`] tree, plus a replay of the fuzz
//! corpus so that every input the fuzzer ever kept is checked by plain `cargo test`.

use super::decode::{decode, Failure, Kind};
use super::value::{encode, encode_version, Value, ValueBuilder};
use super::Limits;

mod compress;

fn dec(bytes: &[u8]) -> Result<Value, String> {
    dec_with(bytes, &Limits::default())
}

fn dec_with(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    decode(bytes, limits, &mut ValueBuilder).map_err(|f| match f {
        Failure::Wire(e) => e.to_string(),
        Failure::Build { offset, error } => format!("{error} (at byte {offset})"),
    })
}

fn envelope(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0x93, 0xab];
    v.extend_from_slice(b"rillet-ckpt");
    v.push(1);
    v.extend_from_slice(body);
    v
}

fn sample() -> Value {
    use Value::*;
    let s = |x: &str| Str(x.to_owned());
    Map(vec![
        (s("nil"), Nil),
        (
            s("ints"),
            Seq(
                Kind::List,
                vec![
                    Int(0),
                    Int(-1),
                    Int(-33),
                    Int(127),
                    Int(128),
                    Int(-129),
                    Int(70000),
                    Int(i64::MIN),
                    Int(i64::MAX),
                    UInt(u64::MAX),
                ],
            ),
        ),
        (
            s("floats"),
            Seq(
                Kind::Tuple,
                vec![
                    Float((-0.0f64).to_bits()),
                    Float(0x7ff8_0000_0000_0abc),
                    Float(f64::INFINITY.to_bits()),
                ],
            ),
        ),
        (
            s("text"),
            Seq(
                Kind::List,
                vec![
                    s(""),
                    s("héllo ✓ 🎉"),
                    s(&"x".repeat(40)),
                    s(&"y".repeat(70000)),
                ],
            ),
        ),
        (s("bin"), Bin(vec![0, 1, 2, 255])),
        (
            Int(5),
            BigInt {
                negative: true,
                magnitude: vec![1, 0, 0, 0, 0, 0, 0, 0, 0],
            },
        ),
        (s("sur"), SurrogateStr(vec![0xed, 0xa0, 0x80])),
        (s("set"), Seq(Kind::Set, vec![Int(1), s("a")])),
        (s("empty"), Seq(Kind::FrozenSet, vec![])),
        (
            s("obj"),
            Seq(
                Kind::Object,
                vec![
                    s("app.cart"),
                    Int(2),
                    Map(vec![(s("items"), Seq(Kind::List, vec![]))]),
                ],
            ),
        ),
        (
            s("when"),
            Seq(Kind::Date, vec![Int(2026), Int(11), Int(30)]),
        ),
        (s("uuid"), Uuid([7; 16])),
        (s("dec"), Decimal("-1.50E+3".into())),
        (
            Seq(Kind::Tuple, vec![Int(1), Nil]),
            Seq(Kind::List, (0..300).map(Int).collect()),
        ),
    ])
}

#[test]
fn round_trips_every_kind() {
    let v = sample();
    let bytes = encode(&v).unwrap();
    assert_eq!(dec(&bytes).unwrap(), v);
}

fn envelope_v2(body: &[u8]) -> Vec<u8> {
    let mut v = envelope(body);
    v[13] = 2;
    v
}

/// Three rows of the same shape with a repeated value, and the repeats in other places.
fn repetitive() -> Value {
    use Value::*;
    let s = |x: &str| Str(x.to_owned());
    let row = |i: i64| Map(vec![(s("role"), s("assistant")), (s("turn"), Int(i))]);
    Seq(
        Kind::List,
        vec![
            row(0),
            row(1),
            row(2),
            Seq(Kind::Tuple, vec![s("assistant"), row(3)]),
            Map(vec![(s("assistant"), Nil), (Int(1), s("role"))]),
        ],
    )
}

#[test]
fn format_2_round_trips_and_shares_repeats() {
    for v in [sample(), repetitive()] {
        let compact = encode_version(&v, 2).unwrap();
        assert_eq!(compact[13], 2);
        assert_eq!(dec(&compact).unwrap(), v);
        assert!(compact.len() <= encode(&v).unwrap().len());
    }
    let compact = encode_version(&repetitive(), 2).unwrap();
    // row(0) is a map; row(1) defines the shape [role, turn]; later rows refer to it.
    let shape_def = [0x93, 0xc7, 11, 15, 0x92, 0xa4];
    assert!(compact.windows(shape_def.len()).any(|w| w == shape_def));
    assert!(compact.windows(3).any(|w| w == [0xd4, 16, 0]));
    assert!(compact.windows(3).any(|w| w == [0xd4, 14, 0]));
}

#[test]
fn format_2_truncations_are_errors() {
    let bytes = encode_version(&repetitive(), 2).unwrap();
    for n in 0..bytes.len() {
        assert!(dec(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
    }
}

#[test]
fn rejects_malformed_tables() {
    let cases: &[(&[u8], &str)] = &[
        (
            &[0xd4, 14, 0],
            "string reference 0 comes before its definition",
        ),
        (
            &[0x92, 0xd6, 13, b'r', b'o', b'l', b'e', 0xd4, 14, 1],
            "string reference 1",
        ),
        (
            &[0x92, 0xd4, 16, 0, 1],
            "shape reference 0 comes before its definition",
        ),
        (
            &[0xd4, 15, 0x90],
            "only allowed as the first element of an array",
        ),
        (
            &[0x92, 1, 0xd4, 16, 0],
            "only allowed as the first element of an array",
        ),
        (&[0x91, 0xd4, 15, 0x90], "a non-empty array of keys"),
        (&[0x93, 0xd5, 15, 0x91, 1, 0, 0], "a str key"),
        (
            &[0x93, 0xc7, 5, 15, 0x92, 0xa1, b'a', 0xa1, b'a', 1, 2],
            "distinct keys",
        ),
        (
            &[0x92, 0xc7, 4, 15, 0x91, 0xa1, b'a', 0xc0, 1],
            "nothing after the keys",
        ),
        (
            &[0x93, 0xd6, 15, 0x91, 0xa2, b'i', b'd', 1, 2],
            "expected a record of 1 values",
        ),
        (&[0xc7, 3, 14, 0, 0, 0], "a 1, 2 or 4-byte index"),
        (&[0xd5, 13, 0xc3, 0x28], "UTF-8"),
    ];
    for (body, want) in cases {
        let err = dec(&envelope_v2(body)).unwrap_err();
        assert!(err.contains(want), "{body:02x?}: {err}");
    }
    // The table ext types do not exist in format 1.
    let err = dec(&envelope(&[0xd6, 13, b'r', b'o', b'l', b'e'])).unwrap_err();
    assert!(err.contains("unknown ext type 13"), "{err}");
}

#[test]
fn writes_shortest_ext_headers() {
    // An empty tuple: fixext 1 holding an empty array.
    let bytes = encode(&Value::Seq(Kind::Tuple, vec![])).unwrap();
    assert_eq!(&bytes[14..], &[0xd4, 1, 0x90]);
    let bytes = encode(&Value::Seq(Kind::Tuple, vec![Value::Int(1), Value::Int(2)])).unwrap();
    assert_eq!(&bytes[14..], &[0xc7, 3, 1, 0x92, 1, 2]);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = encode(&sample()).unwrap();
    for n in 0..bytes.len() {
        assert!(dec(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
    }
}

#[test]
fn depth_limit_is_exact() {
    let limits = Limits {
        max_depth: 10,
        ..Limits::default()
    };
    let nested = |depth: usize| {
        let mut body = vec![0x91; depth - 1];
        body.push(0x90);
        envelope(&body)
    };
    assert!(dec_with(&nested(10), &limits).is_ok());
    let err = dec_with(&nested(11), &limits).unwrap_err();
    assert!(err.contains("max_depth=10"), "{err}");
}

#[test]
fn nesting_bomb_fails_without_recursion() {
    let err = dec(&envelope(&vec![0x91; 1_000_000])).unwrap_err();
    assert!(err.contains("max_depth=512"), "{err}");
}

#[test]
fn declared_lengths_beyond_the_input_fail() {
    for body in [
        &[0xdd, 0xff, 0xff, 0xff, 0xff][..],
        &[0xdf, 0xff, 0xff, 0xff, 0xff],
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
        &[0xc6, 0xff, 0xff, 0xff, 0xff],
        &[0xc9, 0xff, 0xff, 0xff, 0xff, 1],
        &[0x92, 0xc0],
    ] {
        let err = dec(&envelope(body)).unwrap_err();
        assert!(err.contains("remain"), "{body:?}: {err}");
    }
}

#[test]
fn rejects_malformed_inputs() {
    let cases: &[(&[u8], &str)] = &[
        (&[0x82, 0xa1, b'a', 1, 0xa1, b'a', 2], "duplicate map key"),
        (&[0xc0, 0xc0], "trailing"),
        (&[0xa2, 0xff, 0xfe], "UTF-8"),
        (&[0xc1], "0xc1"),
        (&[0xd4, 99, 0], "unknown ext type 99"),
        (&[0xd4, 1, 0xc0], "expected an array"),
        (&[0xc7, 2, 1, 0x90, 0xc0], "ext payload declared"),
        (&[0xd5, 2, 0, 0], "sign byte"),
        (&[0xc7, 3, 5, 0x92, 0xc0, 0xc0], "expected 3 items"),
        (&[0xc7, 3, 3, 0x92, 1, 1], "duplicate set element"),
        (&[0xd4, 11, 0], "16 bytes"),
    ];
    for (body, want) in cases {
        let err = dec(&envelope(body)).unwrap_err();
        assert!(err.contains(want), "{body:?}: {err} (wanted {want})");
    }
}

#[test]
fn rejects_foreign_and_future_envelopes() {
    assert!(dec(b"\x93\xa3abc\x01\xc0")
        .unwrap_err()
        .contains("rillet checkpoint"));
    let mut future = envelope(&[0xc0]);
    future[13] = 4;
    assert!(dec(&future).unwrap_err().contains("newer"));
    assert!(dec(b"").is_err());
}

#[test]
fn enforces_size_and_item_limits() {
    let bytes = envelope(&[0x93, 1, 2, 3]);
    let few = Limits {
        max_items: 3,
        ..Limits::default()
    };
    assert!(dec_with(&bytes, &few).unwrap_err().contains("max_items=3"));
    let small = Limits {
        max_size: 5,
        ..Limits::default()
    };
    assert!(dec_with(&bytes, &small).unwrap_err().contains("max_size=5"));
}

#[test]
fn accepts_surrogates_only_in_their_ext() {
    use super::wire::is_utf8_with_surrogates as ok;
    assert!(ok(b"abc") && ok("é✓🎉".as_bytes()) && ok(&[0xed, 0xbf, 0xbf]));
    assert!(
        !ok(&[0xc0, 0x80])
            && !ok(&[0xf4, 0x90, 0x80, 0x80])
            && !ok(&[0xe0, 0x80, 0x80])
            && !ok(&[0xed])
    );
}

/// Every input kept under `fuzz/corpus/decode_any` must decode or fail cleanly, and what
/// decodes must re-encode to something that decodes to the same value.
#[test]
fn replays_fuzz_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode_any");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        if let Ok(v) = dec(&bytes) {
            assert_eq!(dec(&encode(&v).unwrap()).unwrap(), v);
            assert_eq!(dec(&encode_version(&v, 2).unwrap()).unwrap(), v);
            assert_eq!(dec(&encode_version(&v, 3).unwrap()).unwrap(), v);
        }
        n += 1;
    }
    assert!(n > 0, "empty fuzz corpus in {}", dir.display());
}
