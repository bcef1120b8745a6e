"""What the commands share: loading an agent, opening a store, one-line failures, and the
options every command that runs an agent takes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from rillet.checkpoint import SqliteCheckpointStore

F = TypeVar("F", bound=Callable[..., Any])


def fail(command: str, message: str, code: int = 2) -> NoReturn:
    """Ends the command with one line on stderr (no traceback) and exit status ``code``."""
    print(f"rillet {command}: " + " ".join(message.split()), file=sys.stderr, flush=True)
    raise SystemExit(code)


def info_text(info: Any) -> str:
    """What an interrupt asks, as a person reads it: text as it is, data as JSON where it can be."""
    import json

    if isinstance(info, str):
        return info
    try:
        return json.dumps(info, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(info)


def is_agent(x: object) -> bool:
    """What the Runner accepts: an object (not a class) with a ``run`` method and a name."""
    return not isinstance(x, type) and callable(getattr(x, "run", None)) and isinstance(getattr(x, "name", None), str)


def load_agent(spec: str, what: str = "") -> object:
    """The agent ``MODULE:ATTRIBUTE`` names (an agent, or a function of no arguments that
    returns one); ValueError with a one-line message otherwise, prefixed with ``what`` (the
    option or argument that gave ``spec``), saying what to give instead. The current directory
    is importable, as with ``python -m``. A factory's own error is chained (``__cause__``), for
    ``--verbose`` to show its traceback."""
    import importlib
    import os

    label = f"{what} {spec!r}" if what else repr(spec)
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{label}: expected MODULE:ATTRIBUTE, for example myapp.agents:build_agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: object = importlib.import_module(module_name)
    except Exception as e:
        named = _as_path(module_name)
        if named is not None:  # rillet run myagent.py:build, ./myagent:build: a file, where a module is wanted
            name, folder = named
            raise ValueError(
                f"{label}: {module_name!r} is a file name: give the module's name, as Python imports it: "
                f"{name}:{attribute}" + (f", from the folder {folder}" if folder else "")
            ) from None  # its ModuleNotFoundError's traceback would tell nothing more
        raise ValueError(f"{label}: cannot import {module_name!r}: {type(e).__name__}: {e}") from e
    where = module_name
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{label}: {where} has no attribute {part!r}{_did_you_mean(obj, part)}")
        obj, where = getattr(obj, part), f"{where}.{part}"
    not_agent = _not_an_agent(obj)
    if not_agent:
        raise ValueError(f"{label} is {not_agent}")
    if not is_agent(obj) and callable(obj) and not isinstance(obj, type):
        needs = _required_parameters(obj)
        if needs:
            raise ValueError(
                f"{label} is a function that takes arguments ({', '.join(needs)}): give an agent, "
                "or a function of no arguments that returns one"
            )
        try:
            made = obj()
        except Exception as e:
            raise ValueError(f"{label}: calling it raised {type(e).__name__}: {e}") from e
        if not is_agent(made):
            raise ValueError(
                f"{label} returned {_a(made)} ({_short_repr(made)}), not an agent: the function must "
                "return an agent (an object with a name and run(input)), such as a ChatModelAgent"
            )
        return made
    if isinstance(obj, type):
        raise ValueError(
            f"{label} is the class {obj.__name__}, not an agent: give an instance of it (agent = "
            f"{obj.__name__}(...)), or a function of no arguments that returns one"
        )
    if not is_agent(obj):
        raise ValueError(
            f"{label} is {_a(obj)}, not an agent (name and run(input)) or a function of no arguments returning one"
        )
    return obj


def _as_path(module_name: str) -> tuple[str, str] | None:
    """The module a file path names and, when the current directory cannot import it so, the
    folder to run from (``./app/agents.py``: ``app.agents``; ``/srv/app/agents.py``:
    ``agents`` from ``/srv/app``); None if ``module_name`` is no file path."""
    import os

    text = module_name.replace("\\", "/")
    if not ("/" in text or text.endswith(".py")):
        return None
    parts = [p for p in text.removesuffix(".py").split("/") if p not in ("", ".")]
    if not parts or not parts[-1].isidentifier():
        return None
    if text.startswith("/") or ".." in parts or not all(p.isidentifier() for p in parts):
        return parts[-1], os.path.dirname(text) or "/"
    return ".".join(parts), ""


def _a(obj: object) -> str:
    name = type(obj).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _short_repr(obj: object, limit: int = 40) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _did_you_mean(obj: object, part: str) -> str:
    """``; did you mean 'x'?`` for the attributes of ``obj`` closest to ``part``, else ''."""
    import difflib

    names = [n for n in dir(obj) if not n.startswith("_")]
    close = difflib.get_close_matches(part, names, n=3, cutoff=0.6)
    return "; did you mean " + " or ".join(repr(n) for n in close) + "?" if close else ""


def _not_an_agent(obj: object) -> str:
    """What ``obj`` is when it is a thing users point at by mistake (a tool, a model), else ''."""
    from rillet.tools import BaseTool

    if isinstance(obj, BaseTool):
        name = getattr(getattr(obj, "info", None), "name", "?")
        return (
            f"a tool ({name}), not an agent: give the agent that uses it, for example "
            f"ChatModelAgent(..., tools=[{name}]), or a function of no arguments that builds one"
        )
    return ""


def _required_parameters(fn: Any) -> list[str]:
    """The parameters ``fn`` cannot be called without (none if its signature is unknown)."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def agent_or_fail(command: str, spec: str, what: str = "", *, verbose: bool | None = None) -> Any:
    """The agent ``spec`` names, or the command's end in one line (with ``verbose``, after the
    traceback of the error behind it: an import that failed, a factory that raised; False: the
    line says --verbose shows it; None: a command without the switch)."""
    try:
        return load_agent(spec, what)
    except ValueError as e:
        if verbose and e.__cause__ is not None:
            import traceback

            print("".join(traceback.format_exception(e.__cause__)).rstrip("\n"), file=sys.stderr, flush=True)
        elif verbose is False and e.__cause__ is not None:
            fail(command, f"{e} (--verbose shows its traceback)")
        fail(command, str(e))


def verbose_option(f: F) -> F:
    """``--verbose``: tracebacks of model and tool errors (and of a factory that raised)."""
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="print the traceback of a model or tool error (by default: its type and message)",
    )(f)


def checkpoint_store(command: str, db: str, *, create: bool = True, code: int = 2) -> SqliteCheckpointStore:
    """The SQLite checkpoint store in ``db``; a file that is missing (when not ``create``),
    unreachable, a directory, or not a rillet database ends the command in one line."""
    import sqlite3

    from rillet.checkpoint import CheckpointError, SqliteCheckpointStore

    path = Path(db)
    if path.is_dir():
        fail(command, f"--db {db!r} is a directory; give the path of a SQLite file (it is created if missing)", code)
    if not create and not path.exists():  # opening it would create an empty database
        fail(command, f"no checkpoint database at {db} (give the --db the run used)", code)
    if not create and path.stat().st_size == 0:  # SQLite would take it as a new database, and write it
        fail(command, f"{db} is an empty file, not a checkpoint database (give the --db the run used)", code)
    try:
        return SqliteCheckpointStore(path)
    except (CheckpointError, sqlite3.Error, OSError) as e:
        fail(command, str(e), code)


def default_db() -> Path:
    """Where ``rillet demo`` saves its runs without ``--db``: rillet-demo.db in the temp folder."""
    import tempfile

    return Path(tempfile.gettempdir()) / "rillet-demo.db"


DB_HELP = "the SQLite file the run was saved in (the --db of rillet run, or the file rillet demo prints); required"


def db_or_fail(command: str, db: str | None) -> str:
    """``--db``, which ``resume`` and ``inspect`` both need (no default: a run is read from the
    file it was saved in, never from one picked silently)."""
    if db is not None:
        return db
    fail(
        command,
        f"--db FILE is missing: give the SQLite file the run was saved in (rillet run --db FILE; "
        f"rillet demo's is {default_db()})",
    )


def output_options(f: F) -> F:
    """``--json`` and ``--no-color``."""
    f = click.option("--no-color", is_flag=True, help="plain text output")(f)
    return click.option(
        "--json", "as_json", is_flag=True, help="one JSON object per line (docs/cli.md describes the shape)"
    )(f)


def decision_options(f: F) -> F:
    """``--approve [ID[=VALUE]]`` and ``--reject [ID[=REASON]]``, repeatable."""
    f = click.option(
        "--reject",
        multiple=True,
        is_flag=False,
        flag_value="*",
        metavar="[ID[=REASON]]",
        help="decline interrupt ID (an id, a prefix of one, or a tool's name), with a reason; alone: every approval",
    )(f)
    return click.option(
        "--approve",
        multiple=True,
        is_flag=False,
        flag_value="*",
        metavar="[ID[=VALUE]]",
        help="approve interrupt ID (an id, a prefix of one, or a tool's name); ID=VALUE resumes it with "
        "VALUE (JSON, else text; for an approval, a JSON object of edited arguments); alone: every approval",
    )(f)
