"""The run-scope context variables (Go's ``ctx``): which run, which tool call, which resume.

Three variables, set by the framework and read by everything that needs to know where it runs:

* :data:`RUN`: the run context of the calling code (a ``rillet.run.context.RunContext``);
* :data:`TOOL_CALL`: the tool call being executed (a ``rillet.run.context.ToolCallScope``);
* :data:`RESUME`: the :class:`~rillet._core.interrupt.ResumeScope` of a resumed run;
* :data:`OBSERVING`: the run's observers (a ``rillet.run.observer.Observing``), None when there
  are none, so that a run without observers pays one read of it per hook;
* :data:`PLUGINS`: the run's plugins (a ``rillet.run.plugin.PluginSet``), None when there are none.

The variables hold higher-layer objects, seen here only through the small protocols below
(an address and a resume point), so this module knows nothing about agents or sessions. Code
that drives agents sets them with :func:`install` (a new run's context), :func:`entered` (a
block of code in a run) or, on the per-event hot path, ``RUN.set`` / ``RUN.reset`` directly.
"""

from __future__ import annotations

import contextlib
import contextvars
from contextvars import ContextVar
from typing import Any, Protocol

from rillet._core.address import Address, tool_segment
from rillet._core.interrupt import NOT_RESUMING, ResumePoint, ResumeScope

__all__ = [
    "OBSERVING",
    "PLUGINS",
    "RESUME",
    "RUN",
    "TOOL_CALL",
    "RunScope",
    "ToolScope",
    "current_point",
    "current_resume",
    "entered",
    "here",
    "install",
]


class RunScope(Protocol):
    """What this layer reads of a run context."""

    @property
    def address(self) -> Address: ...

    @property
    def point(self) -> ResumePoint: ...


class ToolScope(Protocol):
    """What this layer reads of a tool-call scope."""

    @property
    def tool_name(self) -> str: ...

    @property
    def call_id(self) -> str: ...

    @property
    def point(self) -> ResumePoint: ...


class Observers(Protocol):
    """What this layer reads of a run's observers."""

    @property
    def run_id(self) -> str: ...


RUN: ContextVar[RunScope | None] = ContextVar("rillet_run", default=None)
TOOL_CALL: ContextVar[ToolScope | None] = ContextVar("rillet_tool_call", default=None)
RESUME: ContextVar[ResumeScope | None] = ContextVar("rillet_resume", default=None)
OBSERVING: ContextVar[Observers | None] = ContextVar("rillet_observing", default=None)
PLUGINS: ContextVar[Any] = ContextVar("rillet_plugins", default=None)  # a PluginSet (rillet.run.plugin)


def current_resume() -> ResumeScope | None:
    """The resume bookkeeping of the calling code's run, or None when it is not a resume."""
    return RESUME.get()


def install(
    ctx: contextvars.Context,
    run: RunScope,
    resume: ResumeScope | None = None,
    observing: Observers | None = None,
    plugins: object = None,
) -> None:
    """Makes ``run`` (and, for a resumed run, ``resume``; with observers, ``observing``; with
    plugins, ``plugins``) current in ``ctx``, the context a new run's task will start in."""
    ctx.run(RUN.set, run)
    if resume is not None:
        ctx.run(RESUME.set, resume)
    if observing is not None:
        ctx.run(OBSERVING.set, observing)
    if plugins is not None:
        ctx.run(PLUGINS.set, plugins)


class entered:
    """Runs the block in ``run`` with no tool call in scope (an agent run from inside a tool
    is not that tool), restoring the caller's scope after. A class, not a @contextmanager
    generator: the Runner's root flow holds one for a run's whole life, and a waiting run
    should not carry a generator frame for it (docs/benchmarks.md, "Memory of a waiting run")."""

    __slots__ = ("_run", "_token", "_tool_token")

    def __init__(self, run: RunScope) -> None:
        self._run = run

    def __enter__(self) -> None:
        self._token = RUN.set(self._run)
        # (set only when a tool call is in scope: each set makes a new context mapping, and
        # the flow enters its agent's run around every step of it)
        self._tool_token = TOOL_CALL.set(None) if TOOL_CALL.get() is not None else None

    def __exit__(self, *exc: object) -> None:
        # a run's coroutine that the GC closes after its loop closed gets here in another
        # context (CPython 3.13 does so): there is nothing to restore then
        with contextlib.suppress(ValueError):
            if self._tool_token is not None:
                TOOL_CALL.reset(self._tool_token)
            RUN.reset(self._token)


def here() -> Address:
    """The address of the calling code: the run's address plus the tool call, if in one."""
    run = RUN.get()
    address = run.address if run is not None else ()
    scope = TOOL_CALL.get()
    if scope is not None:
        address = (*address, tool_segment(scope.tool_name, scope.call_id))
    return address


def current_point() -> ResumePoint:
    """Where the calling tool (or else agent) stands in a resumed run."""
    scope = TOOL_CALL.get()
    if scope is not None:
        return scope.point
    run = RUN.get()
    return run.point if run is not None else NOT_RESUMING
