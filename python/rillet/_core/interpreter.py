"""rillet runs in the main interpreter only.

The native module's caches (stdlib types, exception classes, event-loop helpers, channel and
stream statics) are process-wide and hold the objects of the interpreter that filled them:
a subinterpreter using them, once destroyed, crashed the main interpreter. Importing this
module first (rillet/__init__.py does) turns every refusal into the same ImportError: the
native module's own, raised in interpreters that share the main one's GIL, and CPython's
"does not support loading in subinterpreters", raised in isolated ones.
"""

from __future__ import annotations

import importlib

# The text rust/py/mod.rs raises too.
ONLY_MAIN_INTERPRETER = (
    "rillet supports only the main interpreter: its native caches are process-wide and hold the "
    "objects of the interpreter that filled them, so it cannot be imported in a subinterpreter. "
    "Import rillet in the main interpreter, or use a separate process (multiprocessing, "
    "concurrent.futures.ProcessPoolExecutor)."
)


def _in_subinterpreter() -> bool:
    for name in ("_interpreters", "_xxsubinterpreters"):  # 3.13+, then 3.11-3.12
        try:
            interpreters = importlib.import_module(name)
        except ImportError:
            continue
        current, main = interpreters.get_current(), interpreters.get_main()
        # 3.13 returns (id, whence) pairs.
        if isinstance(current, tuple):
            current, main = current[0], main[0]
        return bool(current != main)
    return False


def _load_native() -> None:
    try:
        importlib.import_module("rillet._native")
    except ImportError as e:
        if str(e) != ONLY_MAIN_INTERPRETER and _in_subinterpreter():
            raise ImportError(ONLY_MAIN_INTERPRETER) from e
        raise


_load_native()
