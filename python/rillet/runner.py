"""The Runner: drives an agent tree for one run at a time and hands out its events.

``Runner(agent).query("hi")`` returns at once with an iterator of events. From plain sync code
the run goes to rillet's background event-loop thread and ``for ev in ...`` blocks (with the GIL
released) for each event; inside a running loop the run is a task on that loop and you iterate
with ``async for`` (a blocking ``for`` there raises an error that says so).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from typing import Any

from rillet._native import Message
from rillet.agent import Agent, AgentInput, RunIterator, start_run
from rillet.context import _RUN, RunContext, Session
from rillet.flow import FlowAgent

__all__ = ["Runner"]


class Runner:
    """Runs ``agent`` (wrapped in the flow wrapper, which fills ``agent_name`` and ``run_path``
    and records the session's events). ``streaming=True`` asks models to stream their output;
    ``checkpoint_store`` is where interrupted runs are saved."""

    def __init__(self, agent: Agent, *, streaming: bool = False, checkpoint_store: Any = None) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(
                f"Runner(agent): expected an agent (name, description and run(input)), got {type(agent).__name__}"
            )
        self.agent = agent
        self.streaming = streaming
        self.checkpoint_store = checkpoint_store
        self._flow = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)

    def run(
        self,
        messages: Iterable[Message],
        *,
        session_values: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> RunIterator:
        """Starts a run on ``messages`` and returns its events at once. ``session_values``
        seed the session every agent of the run shares."""
        msgs = list(messages)
        for i, m in enumerate(msgs):
            if not isinstance(m, Message):
                raise TypeError(f"Runner.run(messages): item {i} is {type(m).__name__}, expected rillet.Message")
        session = Session(values=dict(session_values) if session_values else {})
        ctx = contextvars.copy_context()
        ctx.run(_RUN.set, RunContext(session))
        return start_run(self._flow._events(AgentInput(msgs, self.streaming), **options), ctx)

    def query(self, text: str, **kwargs: Any) -> RunIterator:
        """``run([Message.user(text)], ...)``."""
        return self.run([Message.user(text)], **kwargs)

    def __repr__(self) -> str:
        return f"Runner({self.agent!r}, streaming={self.streaming})"
