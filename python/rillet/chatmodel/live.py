"""ChatModelAgent's live run: one :class:`~rillet.live.LiveModel` session, fed by the user's
requests while the model's answers become events (ADK's ``run_live`` flow).

A sender task forwards the requests to the connection; the agent's own generator turns what
the connection sends into events and runs the tool calls, whose results go back to the model.
The user's messages and the model's whole answers are appended to the run's shared history,
which the next agent of a sequence starts from.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.chatmodel.tool_call import call_tool
from rillet.data.events import AgentAction, AgentEvent, AgentOutput, MessageVariant, RunPath, RunStep
from rillet.errors import Interrupted, LiveError, LiveNotSupportedError
from rillet.flow import TRANSFER_TOOL_NAME
from rillet.live import LiveConnection, LiveContext, LiveResponse, LiveStatus
from rillet.run.agent import AgentInput

if TYPE_CHECKING:
    from rillet.chatmodel.deps import ReactDeps

__all__ = ["run_live"]

_NO_TRANSFER = f"{TRANSFER_TOOL_NAME} is not available in a live session; go on answering the user yourself"


def run_live(
    name: str,
    live_model: object,
    begin: Callable[[], Awaitable[ReactDeps]],
    input: AgentInput,
    live: LiveContext,
    **options: Any,
) -> AsyncIterator[AgentEvent]:
    """The live events of the agent ``name``, whose run starts with ``await begin()`` (what the run
    takes from the agent); raises at once when it has no ``live_model``."""
    if live_model is None:
        raise LiveNotSupportedError(
            f"ChatModelAgent {name!r} cannot run live: it has no live model; "
            "create it with ChatModelAgent(..., live_model=ScriptedLiveModel([...])) or another rillet.live.LiveModel"
        )
    return _live(begin, input, live, **options)


async def _live(
    begin: Callable[[], Awaitable[ReactDeps]], input: AgentInput, live: LiveContext, **options: Any
) -> AsyncIterator[AgentEvent]:
    deps = await begin()  # when the events are first asked for, as an agent's run starts
    assert deps.live_model is not None  # checked by run_live
    path = RunPath((*live.run_path, RunStep(deps.name)))
    extra = {t.info.name: t for t in live.extra_tools}
    # live runs do not transfer (a SequentialAgent hands the session on): transfer_to_agent is not offered
    infos = [*(i for i in deps.tool_infos if i.name != TRANSFER_TOOL_NAME), *(t.info for t in live.extra_tools)]
    model_options = {**deps.model_options, **options.get("model_options", {})}
    messages = AgentInput([*input.messages, *live.history], input.enable_streaming)
    history = await deps.model_input(messages, transfer=False)  # (transfer_to_agent is not offered)
    conn = await deps.live_model.connect(history, tools=infos, **model_options)
    ending: list[bool] = []  # set when the agent ends: its sender then takes nothing more
    sender = asyncio.create_task(_send(live, conn, ending))
    try:
        async for resp in conn.receive():
            done = False
            for out in _events(deps.name, path, resp, live):
                yield out
            msg = resp.message
            if msg is not None and msg.tool_calls and not resp.partial:
                async for ev in _call_tools(deps, path, msg, extra, live, conn, ending):
                    if ev is None:
                        done = True
                    else:
                        yield ev
            if done:
                return
        if sender.done() and not sender.cancelled() and sender.exception() is not None:
            raise LiveError(f"live agent {deps.name!r}: sending to the model failed: {sender.exception()}")
        if not live.closed:  # not the user's close: a silent end would hand a sequence on without task_completed
            raise LiveError(
                f"live agent {deps.name!r}: the live model ended the session before the user closed it "
                "(its server closed the connection); start another run_live to go on"
            )
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)  # (a cancellation of this task still propagates)
        await conn.close()


async def _send(live: LiveContext, conn: LiveConnection, ending: list[bool]) -> None:
    """Forwards the user's requests until the close request, which closes the connection. A
    request taken once the agent is ending is put back for the next agent."""
    try:
        while True:
            req = await live.requests.get()
            if ending:
                live.requests.unget(req)
                return
            if req.close:
                live.closed = True
                return
            if req.content is not None:
                live.history.append(req.content)
                await conn.send_content(req.content, partial=req.partial)
            elif req.blob is not None:
                await conn.send_realtime(req.blob)
            elif req.activity_start:
                await conn.send_activity_start()
            elif req.activity_end:
                await conn.send_activity_end()
    finally:  # a failed send ends the session too: the receive loop must not wait forever
        await conn.close()


def _event(
    name: str, path: RunPath, msg: Message | None, status: LiveStatus | None, role: Any = "assistant"
) -> AgentEvent:
    output = AgentOutput(MessageVariant(message=msg, role=role)) if msg is not None else None
    action = AgentAction(customized_action=status) if status is not None else None
    return AgentEvent(name, path, output, action)


def _events(name: str, path: RunPath, resp: LiveResponse, live: LiveContext) -> list[AgentEvent]:
    """The events of one response; whole answers (cut ones too) join the history."""
    out = []
    msg = resp.message
    if resp.partial:
        if msg is not None:
            out.append(_event(name, path, msg, LiveStatus(partial=True)))
    elif resp.interrupted:
        if msg is not None:
            live.history.append(msg)
        out.append(_event(name, path, msg, LiveStatus(interrupted=True)))
    elif msg is not None:
        live.history.append(msg)
        out.append(_event(name, path, msg, None))
    if resp.turn_complete:
        out.append(_event(name, path, None, LiveStatus(turn_complete=True)))
    return out


async def _call_tools(
    deps: ReactDeps,
    path: RunPath,
    msg: Message,
    extra: dict[str, Any],
    live: LiveContext,
    conn: LiveConnection,
    ending: list[bool],
) -> AsyncIterator[AgentEvent | None]:
    """Runs the calls one by one; each result is an event, joins the history and goes back to
    the model. Yields None after the result of a tool that ends the agent."""
    for call in msg.tool_calls:
        name, args = call.function.name, call.function.arguments
        tool = extra.get(name)
        ends = tool is not None and getattr(tool, "ends_live_agent", False)
        if ends:  # before the tool runs: what the user sends from now on is for the next agent
            ending.append(True)
        if tool is not None or name == TRANSFER_TOOL_NAME:  # (a transfer asked for anyway does not happen)
            done = Message.tool_message(await tool.invoke(args) if tool else _NO_TRANSFER, call.id, name)
            ev = _event(deps.name, path, done.copy(), None, "tool")
            result: Message | asyncio.Future[Message] = done
            ev.output.message_output.tool_name = name  # type: ignore[union-attr]
        else:
            try:
                ev, result = await call_tool(deps, name, call.id, args)
            except Interrupted as e:
                raise LiveError(
                    f"live agent {deps.name!r}: tool {name!r} interrupted; interrupts are not supported in "
                    "live runs (ask the user in the conversation instead)"
                ) from e
            ev.agent_name, ev.run_path = deps.name, path
        yield ev
        if isinstance(result, asyncio.Future):  # a streaming tool: its event went out first
            result = await result
        live.history.append(result)
        if ends:
            yield None
            return
        if not live.closed:  # the user closed the session while the tool ran: the connection is closed
            await conn.send_content(result)
