"""Writes the golden checkpoints of every format version. Run once per new file, never to
rewrite one:

    .venv/bin/python tests/support/golden/make_golden.py

Existing files are kept; tests/data/test_codec_golden.py decodes every one of them forever.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, which holds support/

from rillet import _native, codec  # noqa: E402
from support.codec_helpers import golden_values  # noqa: E402


class _UserV1:
    def __init__(self, name: str) -> None:
        self.name = name


def main() -> None:
    for version in range(1, codec.COMPRESSED_FORMAT_VERSION + 1):
        out = HERE / f"v{version}"
        out.mkdir(exist_ok=True)
        # Format 3 is format 2's body, compressed.
        compress = version == codec.COMPRESSED_FORMAT_VERSION
        body = min(version, codec.FORMAT_VERSION)
        files = {
            f"{name}.bin": codec.encode(value, format_version=body, compress=compress)
            for name, value in golden_values().items()
        }
        v1_registry = {_UserV1: ("golden.user", 1, lambda u: {"name": u.name}, True)}
        files["user_v1.bin"] = _native.codec_encode(_UserV1("Ada Lovelace"), v1_registry, 512, body, compress)
        for name, data in files.items():
            path = out / name
            if not path.exists():
                path.write_bytes(data)
                print("wrote", path)


if __name__ == "__main__":
    main()
