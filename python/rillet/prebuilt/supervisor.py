"""Supervisor: one agent hands work to its sub-agents, each of which hands control straight back
(Eino's ``adk/prebuilt/supervisor``).

The supervisor (usually a :class:`~rillet.ChatModelAgent`) is given the transfer tool for its
sub-agents. A sub-agent is not: when it finishes (without an interrupt, an exit or an error) a
transfer back to the supervisor is appended for it, the same assistant tool call and tool
result the transfer tool makes, so no model call decides the way back. Every agent sees the
whole shared conversation (others' messages as ``For context:`` user messages).
"""

from __future__ import annotations

from collections.abc import Sequence

from rillet.flow import FlowAgent, set_sub_agents, with_deterministic_transfer_to
from rillet.run.agent import Agent, flow_wrapper_of, remember_flow_wrapper

__all__ = ["Supervisor"]


class Supervisor(FlowAgent):
    """``supervisor`` wired to ``sub_agents``; run it with a Runner (or as an AgentTool).

    The container takes the supervisor's name: its events, run paths (``[sup]``,
    ``[sup, worker]``, ``[sup, worker, sup]``) and observer runs are the supervisor's, one
    root for the whole tree. An exit from a sub-agent ends the run; an interrupt in a
    sub-agent resumes there.
    """

    def __init__(self, supervisor: Agent, sub_agents: Sequence[Agent]) -> None:
        if isinstance(supervisor, FlowAgent):
            raise TypeError(
                f"Supervisor: {supervisor.name!r} is already wired into a transfer tree (a FlowAgent); "
                "pass the agent itself"
            )
        known = flow_wrapper_of(supervisor)
        if isinstance(known, FlowAgent) and known.sub_agents:
            raise ValueError(
                f"Supervisor: the sub-agents of {supervisor.name!r} are already set with set_sub_agents; "
                "make a new supervisor agent"
            )
        if not sub_agents:
            raise ValueError(f"Supervisor: {supervisor.name!r} needs at least one sub-agent to supervise")
        super().__init__(supervisor)
        # set_sub_agents (and a Runner given the bare supervisor) then use this container
        if not remember_flow_wrapper(supervisor, self):
            raise TypeError(
                f"Supervisor: {type(supervisor).__name__} takes no attributes; give an agent class "
                "(BaseAgent, ChatModelAgent) that does"
            )
        workers = [with_deterministic_transfer_to(a, [supervisor.name]) for a in sub_agents]
        set_sub_agents(supervisor, workers)

    @property
    def supervisor(self) -> Agent:
        """The supervising agent."""
        return self.agent
