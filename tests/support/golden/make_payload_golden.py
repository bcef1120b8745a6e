"""Writes the golden run checkpoints of the current payload version. Run once per new payload
version, never to rewrite a file:

    .venv/bin/python tests/support/golden/make_payload_golden.py [DIR]

The files go to tests/support/golden/payload_v<PAYLOAD_VERSION>/ (or tests/support/golden/DIR/, which must start
with ``payload_v``: ``payload_v3_typed_states`` holds the first checkpoints whose agent states
are registered dataclasses instead of tagged dicts); existing files are kept, and
tests/checkpoint/test_checkpoint_payload.py loads and resumes every one of them forever.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, which holds support/

from rillet.checkpoint.payload import PAYLOAD_VERSION  # noqa: E402
from support.payload_scenarios import CHECKPOINTS  # noqa: E402


def main() -> None:
    out = HERE / (sys.argv[1] if len(sys.argv) > 1 else f"payload_v{PAYLOAD_VERSION}")
    assert out.name.startswith("payload_v"), "the golden tests find payload_v*/ directories"
    out.mkdir(exist_ok=True)
    for name, make in CHECKPOINTS.items():
        path = out / f"{name}.bin"
        if not path.exists():
            path.write_bytes(make())
            print("wrote", path)


if __name__ == "__main__":
    main()
