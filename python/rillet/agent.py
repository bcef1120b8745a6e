"""Agents: the ``Agent`` protocol, ``AgentInput`` and ``BaseAgent``.

An agent is an event-stream generator: ``agent.run(input)`` returns at once with an
:class:`RunIterator` of :class:`~rillet.events.AgentEvent` and does its work in a task. It never
raises: an exception in the agent's body becomes one error event that ends the stream.

Write an agent by subclassing :class:`BaseAgent` with an async generator ``_run``::

    class Greeter(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            yield event_from_message(Message.assistant("hello"))
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rillet._loop import RunTask, spawn
from rillet._native import Channel, ChannelClosed, Message
from rillet.event_pair import EventGenerator, EventIterator
from rillet.events import AgentEvent

__all__ = ["Agent", "AgentInput", "BaseAgent", "RunIterator", "run_events"]


@dataclass(slots=True)
class AgentInput:
    """What an agent is asked: the conversation so far, and whether to stream if it can."""

    messages: list[Message] = field(default_factory=list)
    enable_streaming: bool = False


@runtime_checkable
class Agent(Protocol):
    """Anything with a ``name``, a ``description`` and ``run(input, **options)`` returning
    an iterator of events at once."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def run(self, input: AgentInput, **options: Any) -> EventIterator[AgentEvent]: ...


class RunIterator(EventIterator[AgentEvent]):
    """The events of one run, for ``for`` (blocking, from any thread) or ``async for``.

    Dropping it, or calling :meth:`close`, abandons the run: its task is cancelled and its
    streams are closed. Use ``with`` / ``async with`` to make that explicit.
    """

    __slots__ = ("_task",)

    def __init__(self, ch: Channel[AgentEvent]) -> None:
        super().__init__(ch)
        self._task: RunTask | None = None

    def __iter__(self) -> Iterator[AgentEvent]:
        return self

    def __next__(self) -> AgentEvent:
        try:
            return self._ch.__next__()
        except RuntimeError as e:
            if _on_loop_thread():
                raise RuntimeError(
                    "a blocking `for` over a run's events would block the running event loop; "
                    "inside async code use `async for event in runner.run(...)`"
                ) from e
            raise

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        return self

    def __anext__(self) -> Any:
        return self._ch.__anext__()

    def close(self) -> None:
        """Abandons the run: cancels its task and drops the events not yet received."""
        task, self._task = self._task, None
        self._ch.close()
        if task is not None:
            task.cancel()
        with contextlib.suppress(ChannelClosed):
            while self._ch.try_recv_many(64):  # drop queued events: their streams close
                pass

    def __enter__(self) -> RunIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RunIterator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                self.close()


def _on_loop_thread() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def start_run(events: AsyncIterator[AgentEvent], ctx: contextvars.Context | None = None) -> RunIterator:
    """Pumps ``events`` into a new run iterator from a task (see :func:`rillet._loop.spawn`),
    running in ``ctx`` (default: a copy of the caller's context)."""
    ch: Channel[AgentEvent] = Channel()
    it = RunIterator(ch)
    it._task = spawn(_pump(events, EventGenerator(ch)), ctx)
    return it


async def _pump(events: AsyncIterator[AgentEvent], gen: EventGenerator[AgentEvent]) -> None:
    try:
        async with contextlib.aclosing(events) as evs:  # type: ignore[type-var]
            async for ev in evs:
                if not gen.send(ev):
                    break  # the consumer is gone
    except BaseException as e:
        gen.close(e)
        raise
    finally:
        gen.close()


async def run_events(agent: Agent, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
    """The events of ``agent`` run on ``input``, in the calling task when the agent is a
    :class:`BaseAgent` (no extra task or channel), else through its ``run`` iterator."""
    if isinstance(agent, BaseAgent):
        async with contextlib.aclosing(agent._events(input, **options)) as evs:  # type: ignore[type-var]
            async for ev in evs:
                yield ev
        return
    it = agent.run(input, **options)
    try:
        async for ev in it:
            yield ev
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


class BaseAgent:
    """Subclass and write ``async def _run(self, input, **options)`` as an async generator of
    events. ``run`` starts it as a task and returns at once; an exception raised by ``_run``
    becomes one error event, after which the stream ends."""

    def __init__(self, name: str = "", description: str = "") -> None:
        self._name = name
        self._description = description

    @property
    def name(self) -> str:
        """The agent's name: used in events, run paths, transfer and agent tools."""
        return self._name

    @property
    def description(self) -> str:
        """What the agent does: shown to agents that may transfer to it or call it as a tool."""
        return self._description

    def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        raise NotImplementedError(f"{type(self).__name__} must define an async generator _run(input, **options)")

    async def _events(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        """``_run``'s events, with an exception turned into a final error event."""
        try:
            async with contextlib.aclosing(self._run(input, **options)) as evs:  # type: ignore[type-var]
                async for ev in evs:
                    yield ev
        except Exception as e:  # errors are events: run never raises
            yield AgentEvent(error=e)

    def run(self, input: AgentInput, **options: Any) -> RunIterator:
        """Starts the agent on ``input`` and returns its events at once."""
        return start_run(self._events(input, **options))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name!r}>"
