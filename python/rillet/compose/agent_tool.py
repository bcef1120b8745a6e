"""AgentTool: an agent a ChatModelAgent calls like a tool (Eino's ``NewAgentTool``).

The inner agent runs as the root of a run of its own: a fresh event log (it does not see the
caller's conversation unless ``full_history=True``) but the caller's session values, and an
address that continues under the caller's ``tool:<name>:<call id>``. Its Exit, Transfer and
BreakLoop actions never leave the tool. The tool's result is the text of the inner agent's last
message; an inner error event makes the tool call fail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from rillet._core.address import tool_segment
from rillet._native import AgenticMessage, Message
from rillet.checkpoint.payload import events_to_records, records_to_events
from rillet.checkpoint.state import checkpoint_state, saved_state
from rillet.data.events import AgentAction, AgentEvent, RunPath, copy_event, interrupt_signal
from rillet.errors import AgentToolError, Interrupted, MiddlewareError
from rillet.flow import flow_of, gen_transfer_messages, rewrite_message
from rillet.run.agent import Agent, AgentInput, StateDelta, users
from rillet.run.context import RunContext, Session, current_run, current_tool_call
from rillet.run.interrupts import composite_interrupt
from rillet.tools import BaseTool, ToolArgumentsError, ToolInfo

__all__ = ["AgentTool", "AgentToolError"]


@checkpoint_state("rillet.agent_tool")
@dataclass(frozen=True, slots=True)
class AgentToolState:
    """What an interrupted agent tool saves: the inner agent's input messages and the inner
    run's event log (records); the inner agents keep their own states by address."""

    LEGACY_KIND = "rillet.agent_tool"

    messages: tuple[Message, ...]
    events: list[Any]

    @classmethod
    def from_legacy(cls, saved: dict[str, Any]) -> AgentToolState:
        return cls(tuple(saved["messages"]), saved["events"])


_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What to ask the agent."}},
    "required": ["request"],
}


class AgentTool(BaseTool):
    """``agent`` as a tool. Its name and description are the agent's (both required).

    Args:
        agent: the agent to call.
        full_history: give the agent the caller's conversation (others' messages rewritten as
            ``For context:`` user messages) instead of just the request.
        input_schema: a JSON schema for the arguments; the raw JSON arguments then become the
            agent's user message.
        emit_internal_events: also show the agent's events to the user, with the caller's run
            path prefixed (they are not recorded in the caller's session).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        full_history: bool = False,
        input_schema: dict[str, Any] | None = None,
        emit_internal_events: bool = False,
    ) -> None:
        if not (callable(getattr(agent, "run", None)) and isinstance(getattr(agent, "name", None), str)):
            raise TypeError(f"AgentTool(agent): expected an agent (name, description, run), got {type(agent).__name__}")
        if not agent.name:
            raise ValueError("AgentTool: the agent needs a non-empty name (it is the tool's name)")
        if not agent.description:
            raise ValueError(
                f"AgentTool: agent {agent.name!r} needs a description (the model reads it to choose tools)"
            )
        self.agent = agent
        self.full_history = full_history
        self.input_schema = input_schema
        self.emit_internal_events = emit_internal_events
        self.info = ToolInfo(agent.name, agent.description, input_schema or _REQUEST_SCHEMA)
        self._flow = flow_of(agent)

    def _messages(self, arguments: str) -> list[Message]:
        scope = current_tool_call()
        if self.full_history and scope is not None and scope.state is not None:
            return self._history(scope.state)
        if self.input_schema is not None:
            return [Message.user(arguments)]
        try:
            data = json.loads(arguments or "{}")
        except ValueError as e:
            raise ToolArgumentsError(self.info.name, [f"arguments are not valid JSON: {e}"]) from None
        request = data.get("request") if isinstance(data, dict) else None
        if not isinstance(request, str):
            raise ToolArgumentsError(self.info.name, ["argument 'request': a string is required"])
        return [Message.user(request)]

    def _history(self, state: list[Message]) -> list[Message]:
        run = current_run()
        caller = run.run_path[-1].agent_name if run is not None and run.run_path else ""
        out: list[Message] = []
        agentic = bool(state) and isinstance(state[0], AgenticMessage)  # a block-list caller: its history stays one
        for m in [*state[:-1], *gen_transfer_messages(self.info.name)]:
            if m.role == "system":
                continue
            if m.role in ("assistant", "tool") or not users(m):  # (a block list's tool results are user messages)
                m = rewrite_message(m, caller)
            out.append(cast(Message, AgenticMessage.from_message(m)) if agentic and type(m) is Message else m)
        return out

    async def invoke(self, arguments: str) -> str:
        messages = self._messages(arguments)
        scope = current_tool_call()
        caller = current_run()
        values = caller.session if caller is not None else Session()
        session = Session(values.values, [], values.lock)  # shared values, a fresh event log
        saved = (
            saved_state(scope.point.state, AgentToolState)
            if scope is not None and scope.point.was_interrupted
            else None
        )
        if saved is not None:
            # Resumed: the inner run's log as it was; the inner agents find their own saved
            # state by address as the run re-enters them.
            session.restore(records_to_events(saved.events))
            messages = list(saved.messages)
        # the segment of the call being run: this tool's, or a dispatching tool's (DeepAgent's task)
        segment = tool_segment(scope.tool_name, scope.call_id) if scope else tool_segment(self.info.name, "")
        address = (*caller.address, segment) if caller else ()
        run = RunContext(session, RunPath(), address, None)
        streaming = scope.streaming if scope is not None else False
        emit = scope.emit if (scope is not None and self.emit_internal_events) else None
        prefix = caller.run_path if caller is not None else RunPath()
        last: AgentEvent | None = None
        delta: dict[str, Any] = {}  # what the inner agents wrote to the session, for the tool's event
        interrupted: Interrupted | None = None
        async for ev in self._flow.events_in(run, AgentInput(messages, streaming)):
            if interrupted is not None:  # the agent's after_agent callbacks run to the end (their events stay here)
                continue
            if emit is None and ev.action is not None and ev.action.state_delta:
                delta.update(ev.action.state_delta)
            if ev.action is not None and (signal := interrupt_signal(ev.action)) is not None:
                state = AgentToolState(tuple(messages), await events_to_records(session.snapshot()))
                interrupted = composite_interrupt("agent tool interrupt", state, signal)
                continue
            if ev.error is not None:
                if isinstance(ev.error, MiddlewareError):  # a failed callback or plugin hook ends the whole run
                    failed = MiddlewareError(f"agent tool {self.info.name!r}: {ev.error}")
                    failed.ends_run = True
                    raise failed from ev.error
                raise AgentToolError(f"agent tool {self.info.name!r}: {ev.error}") from ev.error
            if emit is not None and (ev.action is None or ev.action.interrupted is None):
                local = copy_event(ev)
                ev.run_path = prefix + tuple(ev.run_path)
                a = ev.action
                if a is not None and (a.exit or a.transfer_to_agent or a.break_loop):
                    # shown, never acted on: the inner agent's control actions stay in the tool
                    kept = a.customized_action is not None or a.state_delta is not None
                    ev.action = (
                        AgentAction(customized_action=a.customized_action, state_delta=a.state_delta) if kept else None
                    )
                emit(ev)
                ev = local
            if last is not None and last.message_output is not None and last.message_output.message_stream is not None:
                last.message_output.message_stream.close()  # only the last message counts
            last = ev
        if interrupted is not None:
            raise interrupted
        if last is None:
            raise AgentToolError(f"agent tool {self.info.name!r}: no event returned")
        if delta and scope is not None:  # on the tool's event (ADK-Go: the function response's)
            _carry_delta(scope, delta)
        return await self._result(last, session)

    async def _result(self, last: AgentEvent, session: Session) -> str:
        """The tool's result from the inner run's ``last`` event (and its ``session`` log)."""
        mv = last.message_output
        if mv is None:  # an answer of an output_type (a pydantic object, no message) goes back as its JSON
            dump = getattr(last.output.customized_output if last.output is not None else None, "model_dump_json", None)
            return str(dump()) if callable(dump) else ""
        return (await mv.aget_message()).content


def _carry_delta(scope: Any, delta: dict[str, Any]) -> None:
    """Puts ``delta`` on the action of the tool call's event (made for it, or merged)."""
    action = scope.action
    if action is None:
        scope.action = AgentAction(state_delta=StateDelta(delta))
    elif action.state_delta is None:
        action.state_delta = StateDelta(delta)
    else:
        action.state_delta.update(delta)
