"""Answering interrupts from the command line, the one way ``rillet run``, ``resume`` and
``demo`` all do it: the interrupts a run waits for (:class:`Pending`), the ``--approve`` and
``--reject`` flags (:class:`Decisions`), the prompt (:func:`ask`), and what is said when a flag
matched nothing or the run stopped unanswered. Imports nothing of rillet.examples, which uses it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.markup import escape

from rillet.cli.common import fail, info_text

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.checkpoint.payload import Loaded

NO_ANSWER = object()
"""What a decision is when neither a flag nor the prompt gave one."""

CTRL_C = object()
"""What the prompt gives when it was left with Ctrl-C (no answer, and stop asking)."""

CTRL_C_STATUS = 130
"""The exit status after Ctrl-C at the prompt (128 + SIGINT, as a shell reports it)."""


class Pending(NamedTuple):
    """An interrupt waiting for an answer; ``tool`` and ``arguments`` are set for a
    :func:`~rillet.tools.approval.requires_approval` call."""

    id: str
    address: tuple[str, ...]
    info: Any
    tool: str | None
    arguments: Any

    def label(self) -> str:
        return f"{self.tool} ({self.id[:8]})" if self.tool else f"{self.id[:8]} at {' / '.join(self.address)}"


def _approval_tool(address: Sequence[str]) -> str | None:
    last = address[-1] if address else ""
    return last.split(":")[1] if last.startswith("tool:") else None


def pending_of_event(contexts: Iterable[Any]) -> list[Pending]:
    """The root causes of an interrupt event."""
    out = []
    for c in contexts:
        info = c.info
        tool = _approval_tool(c.address) if isinstance(info, dict) and set(info) == {"tool", "arguments"} else None
        out.append(Pending(c.id, tuple(c.address), info, tool, info["arguments"] if tool else None))
    return out


def pending_of_checkpoint(loaded: Loaded) -> list[Pending]:
    """The root causes of a saved run: interrupts whose address no other one's extends."""
    addresses = loaded.addresses
    out = []
    for iid, address in addresses.items():
        if any(len(a) > len(address) and a[: len(address)] == address for a in addresses.values()):
            continue
        state = loaded.states.get(iid)
        tool = _approval_tool(address) if isinstance(state, dict) and set(state) == {"arguments"} else None
        args: Any = None
        if tool is not None and isinstance(state, dict):
            try:
                args = json.loads(state["arguments"] or "{}")
            except ValueError:
                args = state["arguments"]
        out.append(Pending(iid, address, loaded.infos.get(iid), tool, args))
    return out


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class Decisions:
    """The ``--approve`` and ``--reject`` flags: ``ID``, ``ID=VALUE`` or alone (``*``: every
    approval). ID is an interrupt id, a prefix of one (4 characters at least) or a tool's name."""

    def __init__(self, command: str, approve: Sequence[str], reject: Sequence[str]) -> None:
        self.command = command
        self.rules: list[tuple[str, str, str | None]] = []  # (approve|reject, key, value)
        for kind, flags in (("approve", approve), ("reject", reject)):
            for flag in flags:
                key, eq, value = flag.partition("=")
                if not key:
                    fail(command, f"--{kind} {flag!r}: expected ID or ID=VALUE (ID: an interrupt id or a tool's name)")
                self.rules.append((kind, key, value if eq else None))
        self.used: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def _matches(self, key: str, p: Pending) -> bool:
        if key == "*":
            return p.tool is not None
        return key in (p.id, p.tool) or (len(key) >= 4 and p.id.startswith(key))

    def decide(self, p: Pending) -> Any:
        """The resume data the flags give ``p``, else NO_ANSWER."""
        from rillet.tools.approval import approve, edit, reject

        for i, (kind, key, value) in enumerate(self.rules):
            if not self._matches(key, p):
                continue
            self.used.add(i)
            if kind == "reject":
                return reject(value or "rejected with --reject") if p.tool else (False if value is None else value)
            if value is None:
                return approve() if p.tool else True
            data = _value(value)
            if p.tool is None:
                return data
            if not isinstance(data, dict):
                fail(
                    self.command,
                    f"--approve {key}={value}: for an approval, VALUE is a JSON object of {p.tool}'s arguments",
                )
            return edit(data)
        return NO_ANSWER

    def unused(self) -> list[str]:
        return [f"--{k} {key}" for i, (k, key, _) in enumerate(self.rules) if i not in self.used and key != "*"]


def not_utf8(text: str) -> str:
    """Where ``text`` (an argument or a line read, its undecodable bytes kept as surrogates)
    is not UTF-8 text, as ``byte 0xe9 at position 3``; empty if it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        char = ord(text[e.start])
        what = f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"the lone surrogate U+{char:04X}"
        return f"{what} at position {e.start}"
    return ""


def shown(text: str) -> str:
    """``text`` as a terminal can print it: bytes that are not UTF-8 as U+FFFD."""
    if not not_utf8(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte
        return text.encode("utf-8", "replace").decode("utf-8")


def announce(console: Console, p: Pending) -> None:
    """The line that says an interrupt waits (and, for one that is not an approval, what it asks)."""
    what = "approval needed" if p.tool else "interrupt"
    console.print(f"[magenta]{what}:[/] {escape(p.label())}", highlight=False)
    if p.tool is None and p.info is not None:  # what it asks: the person answering needs it
        console.print(f"  [dim]info[/] {escape(info_text(p.info))}", highlight=False)


def ask(console: Console, p: Pending, readline: Callable[[], str] | None = None) -> Any:
    """The prompt for ``p``, the one ``rillet run``, ``resume`` and ``demo`` all show: the answer
    typed (a terminal) or piped (stdin); NO_ANSWER at the input's end, CTRL_C if it was left with
    Ctrl-C. An approval takes ``a``/``y`` (approve), ``r``/``n`` [reason] (reject) or ``e``
    [JSON] (edit the arguments); any other interrupt takes its resume data (JSON, else text)."""
    try:
        return _ask(console, p, readline or sys.stdin.readline)
    except KeyboardInterrupt:
        console.print()
        return CTRL_C


def _ask(console: Console, p: Pending, readline: Callable[[], str]) -> Any:
    from rillet.tools.approval import approve, edit, reject

    while True:
        if p.tool is None:
            console.print(f"  [bold]resume data[/] for {escape(p.label())} (JSON, else text): ", end="")
        else:
            console.print(
                f"  [bold]{escape(p.tool)}[/]: {escape('[a]pprove, [r]eject [reason], [e]dit [JSON]')}? ", end=""
            )
        line = readline()
        if not line:
            console.print()
            return NO_ANSWER
        text = line.strip()
        if not sys.stdin.isatty():  # a piped answer: show it, as a terminal would have
            console.print(shown(text), markup=False, highlight=False)
        if not_utf8(text):  # (stdin keeps such bytes as surrogates: rillet.cli.main)
            console.print(f"  [red]that answer is not UTF-8 text ({not_utf8(text)})[/]")
            continue
        if p.tool is None:
            return _value(text)
        word, _, rest = text.partition(" ")
        word = word.lower()
        if word in ("a", "approve", "y", "yes"):
            return approve()
        if word in ("r", "reject", "n", "no"):
            return reject(rest.strip() or "rejected at the prompt")
        if word in ("e", "edit"):
            if not rest:
                console.print("  arguments (a JSON object): ", end="")
                rest = readline()
                if not sys.stdin.isatty():
                    console.print(shown(rest.strip()), markup=False, highlight=False)
            if not_utf8(rest):
                console.print(f"  [red]those arguments are not UTF-8 text ({not_utf8(rest)})[/]")
                continue
            try:
                args = json.loads(rest)
            except ValueError as e:
                console.print(f"  [red]not JSON ({escape(str(e))})[/]")
                continue
            if isinstance(args, dict):
                return edit(args)
            console.print("  [red]the arguments must be a JSON object[/]")
            continue
        console.print("  answer a, r or e")


def warn_unused(
    command: str, decisions: Decisions, waiting: Sequence[Pending], asked: Sequence[Pending], warned: set[str]
) -> None:
    """A line on stderr for each flag that matched no interrupt and is not in ``warned``, naming
    the interrupts that wait (else those the run asked), the closest tool name, and how to
    answer them."""
    import difflib

    for flag in decisions.unused():
        if flag in warned:
            continue
        warned.add(flag)
        kind, _, key = flag.partition(" ")
        listed = waiting or asked
        if not listed:
            what = "the run asked for no approval or other answer"
        else:
            verb = "waits for" if waiting else "asked for"
            what = f"it {verb}: {', '.join(p.label() for p in listed)}"
            tools = sorted({p.tool for p in listed if p.tool})
            close = difflib.get_close_matches(key, tools, n=1, cutoff=0.6)
            if close:
                what += f"; did you mean {kind} {close[0]}?"
            elif waiting:
                what += f" (give {kind} a tool's name or an interrupt id, or {kind} alone for every approval)"
        print(f"rillet {command}: {flag} matched no interrupt of this run; {what}", file=sys.stderr)


def resume_command(checkpoint_id: str, db: str, *rest: str) -> str:
    """``rillet resume CHECKPOINT --db FILE REST...`` as a shell runs it: each word quoted
    where it has to be (a space in a path or an id), so that it can be pasted as printed."""
    import shlex

    return " ".join(shlex.quote(w) for w in ("rillet", "resume", checkpoint_id, "--db", db, *rest) if w)


def resume_hint(checkpoint_id: str, db: str, spec: str, missing: Sequence[Pending]) -> str:
    """The command that answers ``missing`` later (``spec`` empty: the demo's run)."""
    answers = dict.fromkeys(f"{p.tool}" if p.tool else f"{p.id}=VALUE" for p in missing)
    return resume_command(checkpoint_id, db, spec, *(w for a in answers for w in ("--approve", a)))
