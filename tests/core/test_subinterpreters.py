"""rillet refuses to load in a subinterpreter, with one clear ImportError, and the main
interpreter keeps working after the subinterpreter is destroyed.

rillet's native caches are process-wide: it once loaded in a subinterpreter, and destroying
that interpreter crashed the main one (segfault) or broke `codec.encode(uuid)` there. Each
case runs in a child process, so a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from rillet._core.interpreter import ONLY_MAIN_INTERPRETER

CHILD = textwrap.dedent(
    '''
    import os, sys, uuid
    kind, order = sys.argv[1], sys.argv[2]
    try:
        import _interpreters as interpreters  # 3.13+
        def create(): return interpreters.create(kind)
    except ImportError:
        import _xxsubinterpreters as interpreters  # 3.11, 3.12
        def create(): return interpreters.create(isolated=kind == "isolated")
    if order == "main-first":
        import rillet
    SUB = """
    import os
    try:
        import rillet
    except ImportError as e:
        os.write(1, ("SUB ImportError: %s\\\\n" % e).encode())
    else:  # what rillet once allowed, and what then broke the main interpreter
        import uuid
        from rillet import Channel, codec
        codec.decode(codec.encode(uuid.uuid4()))
        Channel().send(1)
        os.write(1, b"SUB imported and used\\\\n")
    """
    interp = create()
    failed = interpreters.run_string(interp, SUB)
    assert failed is None, failed
    interpreters.destroy(interp)
    import rillet
    from rillet import Channel, codec
    u = uuid.uuid4()
    assert codec.decode(codec.encode(u)) == u
    ch = Channel()
    ch.send("x")
    assert ch.recv() == "x"
    print("MAIN ok")
    '''
)


@pytest.mark.slow
@pytest.mark.parametrize("order", ["main-first", "sub-first"])
@pytest.mark.parametrize("kind", ["legacy", "isolated"])
def test_a_subinterpreter_gets_an_import_error_and_the_main_one_keeps_working(kind: str, order: str) -> None:
    pytest.importorskip("_interpreters" if sys.version_info >= (3, 13) else "_xxsubinterpreters")
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, order], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    lines = proc.stdout.splitlines()
    assert f"SUB ImportError: {ONLY_MAIN_INTERPRETER}" in lines
    assert lines[-1] == "MAIN ok"
