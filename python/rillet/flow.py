"""The flow wrapper (Eino's ``flowAgent``): what every agent run by a Runner is wrapped in.

It gives the agent its place in the run (run path ``parent + [name]``, address
``parent + ["agent:<name>"]``), fills ``agent_name`` and ``run_path`` on the events the agent
made itself, and records those events in the session so that later agents can rebuild the
conversation. Only the last own event's action counts for what happens after the agent ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from rillet.agent import Agent, AgentInput, BaseAgent, run_events
from rillet.context import _RUN, RunContext, Session, current_run
from rillet.events import AgentAction, AgentEvent, copy_event

__all__ = ["FlowAgent", "advance_in"]


async def advance_in(run: RunContext, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """Iterates ``events`` with the run context set to ``run`` while each event is produced,
    and restored before it is handed on, so the consumer's own context is never changed."""
    try:
        while True:
            token = _RUN.set(run)
            try:
                ev = await events.__anext__()
            except StopAsyncIteration:
                return
            finally:
                _RUN.reset(token)
            yield ev
    finally:
        token = _RUN.set(run)
        try:
            await events.aclose()  # type: ignore[attr-defined]
        finally:
            _RUN.reset(token)


class FlowAgent(BaseAgent):
    """Wraps ``agent`` with run-path ownership and session recording."""

    def __init__(self, agent: Agent) -> None:
        super().__init__(agent.name, agent.description)
        self.agent = agent

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        parent = current_run()
        if parent is None:  # run on its own, outside a Runner: a fresh session
            parent = RunContext(Session())
        run = parent.child(self.name)
        if not parent.run_path:
            run = replace(run, root_input=input)
        own_path = run.run_path
        session = run.session
        last_action: AgentAction | None = None
        async for ev in advance_in(run, run_events(self.agent, input, **options)):
            if not ev.run_path:
                ev.agent_name = self.name
                ev.run_path = own_path
            if ev.run_path is own_path or ev.run_path == own_path:
                last_action = ev.action
                if last_action is None or last_action.interrupted is None:
                    with session.lock:
                        session.events.append(copy_event(ev))
            yield ev
        # What the last own action asks for next (transfer) is decided here; see multi-agent.
        del last_action
