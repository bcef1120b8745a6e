"""Golden checkpoints: bytes written by each format version, decoded by every later rillet,
forever.

Never edit or regenerate a file under tests/support/golden/v<N>; add new files with
tests/support/golden/make_golden.py instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rillet.data.codec import COMPRESSED_FORMAT_VERSION, FORMAT_VERSION, decode, encode
from support.codec_helpers import User, assert_identical, golden_values

GOLDEN = Path(__file__).resolve().parents[1] / "support" / "golden"
VERSIONS = list(range(1, COMPRESSED_FORMAT_VERSION + 1))
# The formats whose bytes the encoder must reproduce exactly. Format 3's compressed bytes
# may change with the LZ4 compressor; what it must keep is the body it decompresses to.
PLAIN_VERSIONS = list(range(1, FORMAT_VERSION + 1))
VALUES = golden_values()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_golden_file_decodes_exactly(name: str, version: int) -> None:
    assert_identical(decode((GOLDEN / f"v{version}" / f"{name}.bin").read_bytes()), VALUES[name])


@pytest.mark.parametrize("version", PLAIN_VERSIONS)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_encoder_still_writes_the_golden_bytes(name: str, version: int) -> None:
    # If this fails, the encoder's output changed: that is only fine if the old bytes still
    # decode (test above) and the change is documented in docs/checkpoint-format.md.
    assert encode(VALUES[name], format_version=version) == (GOLDEN / f"v{version}" / f"{name}.bin").read_bytes()


@pytest.mark.parametrize("version", VERSIONS)
def test_golden_old_object_is_migrated_to_the_current_version(version: int) -> None:
    assert decode((GOLDEN / f"v{version}" / "user_v1.bin").read_bytes()) == User("Ada", "Lovelace")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_golden_file_is_covered(version: int) -> None:
    covered = {f"{name}.bin" for name in VALUES} | {"user_v1.bin"}
    assert {p.name for p in (GOLDEN / f"v{version}").iterdir()} == covered


def test_format_2_golden_records_use_the_tables() -> None:
    data = (GOLDEN / "v2" / "records.bin").read_bytes()
    assert data[13] == 2
    assert len(data) < len((GOLDEN / "v1" / "records.bin").read_bytes())
    for code in (13, 14, 15, 16):  # str def, str ref, shape def, shape ref
        assert bytes([code]) in data


@pytest.mark.parametrize("name", sorted(VALUES))
def test_format_3_golden_files_hold_the_format_2_body(name: str) -> None:
    data = (GOLDEN / "v3" / f"{name}.bin").read_bytes()
    body = (GOLDEN / "v2" / f"{name}.bin").read_bytes()[14:]
    assert data[13] == 3
    assert _compressed_header(data) == bytes([1]) + len(body).to_bytes(4, "big")
    assert _compressed_header(encode(VALUES[name], compress=True)) == _compressed_header(data)


def _compressed_header(data: bytes) -> bytes:
    """The algorithm byte (1, LZ4 block) and the body's size, after a bin 8 or bin 16 head."""
    return data[16:21] if data[14] == 0xC4 else data[17:22]
