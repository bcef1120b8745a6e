"""A failed allocation while encoding or decoding raises MemoryError; it never yields a
wrong value (the short-str cache once stored None for a str it could not make) or an
"internal error".

CPython's `_testcapi.set_nomemory(n, n + 1)` makes exactly the n-th allocation fail; the
child process tries every n over one encode and one decode of a value with every kind of
field, so the test is deterministic. It runs in a child so a crash fails the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("_testcapi")

CHILD = textwrap.dedent(
    """
    import datetime, decimal, json, sys, uuid, zoneinfo
    import _testcapi
    from rillet import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage, codec

    call = ToolCall(id="call_1", function=FunctionCall(name="weather", arguments='{"city": "Paris"}'))
    message = Message(
        "assistant", "it is sunny", tool_calls=[call],
        response_meta=ResponseMeta("stop", Usage(1, 2, 3, 0, 0)), extra={"k": "v", "n": [2]},
    )
    value = {
        "role": "user", "abc": [1, "x", {"k": "v", "kk": 2.5}], "name": "bob", "t": ("a", "b"),
        "big": -(10**30), "u": 2**64 - 1, "s": {1, 2}, "f": frozenset({"q"}), "b": b"\\x00\\x01",
        "text": "héllo wörld 🦀", "sur": "a\\udc80b", "id": uuid.UUID(int=7), "d": decimal.Decimal("1.5"),
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
        "zoned": datetime.datetime(2024, 1, 2, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
        "day": datetime.date(2024, 1, 2), "span": datetime.timedelta(1, 2, 3),
        "messages": [message, Message.user([ContentPart("hi")]), message],
    }
    results = {"ok": 0, "memory_errors": 0, "wrong": [], "other": []}

    def attempt(n, fn):
        _testcapi.set_nomemory(n, n + 1)
        try:
            return fn()
        finally:
            _testcapi.remove_mem_hooks()

    def check(label, n, fn, expected):
        try:
            out = attempt(n, fn)
        except MemoryError:
            results["memory_errors"] += 1
            return
        except BaseException as e:  # PyO3's PanicException is a BaseException
            results["other"].append(f"{label} #{n}: {type(e).__name__}: {e}")
            return
        if out == expected:
            results["ok"] += 1
        else:
            results["wrong"].append(f"{label} #{n}: {out!r}"[:300])

    for kwargs in ({"format_version": 1}, {}, {"compress": True}):
        data = codec.encode(value, **kwargs)
        assert codec.decode(data) == value
        for n in range(int(sys.argv[1])):
            check(f"decode {kwargs}", n, lambda: codec.decode(data), value)
            check(f"encode {kwargs}", n, lambda: codec.encode(value, **kwargs), data)
    print(json.dumps(results))
    """
)


@pytest.mark.slow
def test_every_failed_allocation_raises_memory_error() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, "400"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-3000:]}"
    results = json.loads(proc.stdout.splitlines()[-1])
    assert results["wrong"] == [], "\n".join(results["wrong"])
    assert results["other"] == [], "\n".join(results["other"])
    # Both outcomes were exercised: failures were injected, and the value still round-tripped.
    assert results["memory_errors"] > 100
    assert results["ok"] > 100
