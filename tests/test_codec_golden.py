"""Golden checkpoints: bytes written by format v1, decoded by every later rillet, forever.

Never edit or regenerate a file under tests/golden/v1; add new files with
tests/golden/make_golden.py instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from codec_helpers import User, assert_identical, golden_values

from rillet.codec import decode, encode

GOLDEN = Path(__file__).parent / "golden" / "v1"
VALUES = golden_values()


@pytest.mark.parametrize("name", sorted(VALUES))
def test_golden_file_decodes_exactly(name: str) -> None:
    assert_identical(decode((GOLDEN / f"{name}.bin").read_bytes()), VALUES[name])


@pytest.mark.parametrize("name", sorted(VALUES))
def test_encoder_still_writes_the_golden_bytes(name: str) -> None:
    # If this fails, the encoder's output changed: that is only fine if the old bytes still
    # decode (test above) and the change is documented in docs/checkpoint-format.md.
    assert encode(VALUES[name]) == (GOLDEN / f"{name}.bin").read_bytes()


def test_golden_v1_object_is_migrated_to_the_current_version() -> None:
    assert decode((GOLDEN / "user_v1.bin").read_bytes()) == User("Ada", "Lovelace")


def test_every_golden_file_is_covered() -> None:
    covered = {f"{name}.bin" for name in VALUES} | {"user_v1.bin"}
    assert {p.name for p in GOLDEN.iterdir()} == covered
