"""The encoder never crashes on deep nesting: it walks with a heap stack, not recursion.

Each crash reproducer runs in a child interpreter, so a regression fails the test instead of
killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from rillet import codec
from rillet.data.codec import MAX_DEPTH_LIMIT, EncodeError, decode, encode


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout


def test_a_list_nested_40000_deep_encodes_and_decodes() -> None:
    out = _run(
        """
        from rillet import codec
        x = []
        for _ in range(40000):
            x = [x]
        data = codec.encode(x, max_depth=40010)
        back, depth = codec.decode(data, max_depth=40010), 0
        while back:
            back, depth = back[0], depth + 1
        print(depth, len(data))
        """
    )
    assert out.split()[0] == "40000"


def test_every_container_kind_nests_deeply() -> None:
    out = _run(
        """
        import dataclasses
        from rillet import codec

        @dataclasses.dataclass
        class Box:
            inner: object

        codec.register_type(Box, "test.depth.box")
        x = None
        for i in range(20000):
            x = [({"k": x},), {frozenset({i}): Box(x)}][i % 2]
        data = codec.encode(x, max_depth=100000)
        for fmt in (1, 2):
            codec.decode(codec.encode(x, max_depth=100000, format_version=fmt), max_depth=100000)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_the_default_depth_fits_a_128_kib_thread_stack() -> None:
    out = _run(
        """
        import dataclasses, threading
        from rillet import codec, Message

        @dataclasses.dataclass
        class Node:
            child: object

        codec.register_type(Node, "test.depth.node")
        # wrap, and the nesting levels one wrap adds (an object and its dict of fields: 2)
        shapes = {
            "list": (lambda x: [x], 1),
            "dict": (lambda x: {"a": x, "b": 1}, 1),
            "tuple": (lambda x: (x,), 1),
            "object": (lambda x: Node(x), 2),
        }
        results = []

        def work():
            try:
                for name, (wrap, levels) in shapes.items():
                    x = Message.user("leaf")  # 2 levels too: the object and its dict
                    for _ in range((codec.DEFAULT_MAX_DEPTH - 2) // levels):
                        x = wrap(x)
                    codec.decode(codec.encode(x))
                    try:
                        codec.encode(wrap(x))
                    except codec.EncodeError as e:
                        results.append(f"{name}: {'max_depth=512' in str(e)}")
            except BaseException as e:
                results.append(repr(e))

        threading.stack_size(128 * 1024)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        print(";".join(results))
        """
    )
    assert out.strip() == "list: True;dict: True;tuple: True;object: True"


@pytest.mark.parametrize("fn", [encode, decode])
@pytest.mark.parametrize("bad", [MAX_DEPTH_LIMIT + 1, 10**30, -1])
def test_max_depth_is_bounded(fn: Any, bad: int) -> None:
    with pytest.raises(ValueError, match=rf"max_depth must be from 0 to {MAX_DEPTH_LIMIT}.*got {bad}"):
        fn(encode([]) if fn is decode else [], max_depth=bad)


def test_the_limit_itself_is_accepted() -> None:
    assert decode(encode([[1]], max_depth=MAX_DEPTH_LIMIT), max_depth=MAX_DEPTH_LIMIT) == [[1]]


def test_a_cycle_far_down_a_deep_path_is_reported_as_a_cycle() -> None:
    top: list[Any] = []
    x = top
    for _ in range(1000):
        x.append([])
        x = x[0]
    middle = top
    for _ in range(500):
        middle = middle[0]
    x.append(middle)
    with pytest.raises(EncodeError, match=r"reference cycle: the list at \[0\]\[0\]"):
        encode(top, max_depth=5000)


def test_error_paths_run_through_every_container_kind() -> None:
    class Bad:
        pass

    value = {"a": [0, ({"b": {1: Bad()}},)]}
    for fmt in (1, 2):
        with pytest.raises(EncodeError, match=r"at a\[1\]\[0\]\['b'\]\[1\]"):
            encode(value, format_version=fmt)
    with pytest.raises(EncodeError, match=r"at \{<item>\}\[1\]"):
        encode({(1, Bad())})
    with pytest.raises(EncodeError, match=r"at \[<a key>\]\[0\]"):
        encode({(Bad(),): 1})
    assert codec.decode(codec.encode({"x": [1, (2,)]})) == {"x": [1, (2,)]}
