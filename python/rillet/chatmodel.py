"""ChatModelAgent: Eino's ReAct loop over a chat model and tools.

Each iteration calls the model with the agent's whole message state; if the reply asks for
tools, they run (concurrently by default), their results join the state and the model is called
again; a reply without tool calls is the final answer. ``max_iterations`` bounds model calls.

Events, in order: one per model call (a stream, emitted before the agent reads its own copy,
when the run streams), one per tool call as each call finishes (role ``tool``), and, if a
return-directly tool was called, its event last, once the whole round is done. There is no
separate "final" event: the last model event is the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rillet._loop import Inbox, child_task, joined, result_of
from rillet._native import Message, StreamReader, ToolCall, pipe
from rillet.agent import AgentCallback, AgentInput, BaseAgent
from rillet.context import _TOOL_CALL, ToolCallScope, add_session_value, current_run
from rillet.errors import ExceedMaxIterationsError, ToolCallError
from rillet.events import AgentEvent, event_from_message
from rillet.interrupt import Interrupted, composite_interrupt_event, current_resume
from rillet.schema import aconcat_message_stream

if TYPE_CHECKING:
    from rillet.models.base import ChatModel
    from rillet.tools import BaseTool, ToolInfo

_log = logging.getLogger(__name__)

__all__ = [
    "ChatModelAgent",
    "ExceedMaxIterationsError",
    "ModelContext",
    "ToolCallContext",
    "ToolCallError",
]


@dataclass(slots=True)
class ModelContext:
    """What a model callback sees: the agent, the iteration (1 = first model call), the
    messages about to be sent (``before_model``) and the tools offered."""

    agent_name: str
    iteration: int
    messages: list[Message]
    tools: list[ToolInfo] = field(default_factory=list)


@dataclass(slots=True)
class ToolCallContext:
    """What a tool-call wrapper sees: the tool's name, the call id and its JSON arguments."""

    agent_name: str
    tool_name: str
    call_id: str
    arguments: str


BeforeModel = Callable[[ModelContext], "list[Message] | None | Awaitable[list[Message] | None]"]
AfterModel = Callable[[ModelContext, Message], "Message | None | Awaitable[Message | None]"]
ToolWrapper = Callable[[ToolCallContext, Callable[[str], Awaitable[str]]], Awaitable[str]]
BeforeAgent = Callable[[AgentInput], "AgentInput | None | Awaitable[AgentInput | None]"]
AfterAgent = Callable[[list[Message]], "None | Awaitable[None]"]
GenModelInput = Callable[[str, AgentInput], "list[Message] | Awaitable[list[Message]]"]


async def _awaited(value: Any, model: Any, method: str) -> Any:
    if not inspect.isawaitable(value):
        raise TypeError(f"{type(model).__name__}.{method} must be `async def` (the ChatModel protocol); it returned {type(value).__name__}")
    return await value


def _check_arguments(
    name: Any,
    description: Any,
    instruction: Any,
    model: Any,
    tools: Any,
    return_directly: Any,
    max_iterations: Any,
    exit_tool: Any,
) -> None:
    """Clear errors for the mistakes people make when building a ChatModelAgent."""
    from rillet.tools import BaseTool

    where = f"ChatModelAgent {name!r}"
    if not isinstance(name, str) or not name:
        raise TypeError(f"ChatModelAgent(name=...): a non-empty str is required, got {name!r}")
    for field_name, value in (("description", description), ("instruction", instruction)):
        if not isinstance(value, str):
            raise TypeError(
                f"{where}: {field_name} must be str, got {type(value).__name__}; "
                "the order is (name, description, instruction, model, tools), or pass model=... by keyword"
            )
    if model is None:
        raise ValueError(f"{where}: model is required (for example ScriptedModel([...]) or OpenAIChatModel('gpt-4o-mini'))")
    if not (callable(getattr(model, "generate", None)) and callable(getattr(model, "stream", None))):
        hint = f"; for a hosted model use OpenAIChatModel({model!r})" if isinstance(model, str) else ""
        raise TypeError(f"{where}: model must be a ChatModel (async generate and stream), got {type(model).__name__}{hint}")
    if isinstance(tools, (str, bytes, BaseTool)) or callable(tools) or not hasattr(tools, "__iter__"):
        raise TypeError(f"{where}: tools must be a list of tools, got {type(tools).__name__}; write tools=[...]")
    if isinstance(return_directly, str):
        raise TypeError(f"{where}: return_directly must be a set of tool names, e.g. {{{return_directly!r}}}")
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool):
        raise TypeError(f"{where}: max_iterations must be an int, got {max_iterations!r}")
    if exit_tool is not None and not isinstance(exit_tool, BaseTool):
        what = "the class; pass an instance, e.g. ExitTool()" if isinstance(exit_tool, type) else type(exit_tool).__name__
        raise TypeError(f"{where}: exit_tool must be a tool instance, got {what}")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _as_list(fns: Any) -> list[Any]:
    if fns is None:
        return []
    if callable(fns):
        return [fns]
    return list(fns)


class ChatModelAgent(BaseAgent):
    """An agent that runs the ReAct loop over ``model`` and ``tools``.

    Args:
        name: the agent's name (events, transfer, agent tools).
        description: what it does, for agents that may call or transfer to it.
        instruction: the system prompt. When the run has session values it is formatted with
            them (``"Hello {user}"``); otherwise it is used verbatim.
        model: a :class:`~rillet.models.ChatModel` (``generate`` and ``stream``).
        tools: tools (``@tool`` functions, :class:`~rillet.tools.BaseTool`) or plain functions.
        return_directly: names of tools whose result ends the run (after the round).
        max_iterations: most model calls per run (default 20); the next one fails with
            :class:`ExceedMaxIterationsError`.
        exit_tool: a tool (such as :class:`~rillet.tools.ExitTool`) that ends the run; it is
            added to the tools and returns directly.
        output_key: store the final answer's text in the session under this key.
        gen_model_input: ``(instruction, input) -> messages`` replaces the default
            ``[system(instruction)] + input.messages``.
        execute_tools_sequentially: run a round's tool calls one after another.
        tool_error: ``"return"`` (default) sends a failed tool's error text back to the model
            as its result; ``"raise"`` ends the run with an error event (Eino's behaviour).
        before_model, after_model, wrap_tool_call, before_agent, after_agent: callbacks
            (sync or async; one or a list), see the module documentation.
        model_options: keyword options passed to every model call.
        before_agent_callbacks, after_agent_callbacks: ADK-Go's agent callbacks around the
            whole call (see :class:`~rillet.agent.BaseAgent`).
    """

    def __init__(
        self,
        name: str,
        description: str = "",
        instruction: str = "",
        model: ChatModel | None = None,
        tools: Iterable[Any] = (),
        *,
        return_directly: Iterable[str] = (),
        max_iterations: int = 20,
        exit_tool: BaseTool | None = None,
        output_key: str | None = None,
        gen_model_input: GenModelInput | None = None,
        execute_tools_sequentially: bool = False,
        tool_error: Literal["return", "raise"] = "return",
        before_model: BeforeModel | Iterable[BeforeModel] | None = None,
        after_model: AfterModel | Iterable[AfterModel] | None = None,
        wrap_tool_call: ToolWrapper | Iterable[ToolWrapper] | None = None,
        before_agent: BeforeAgent | Iterable[BeforeAgent] | None = None,
        after_agent: AfterAgent | Iterable[AfterAgent] | None = None,
        model_options: dict[str, Any] | None = None,
        before_agent_callbacks: Iterable[AgentCallback] = (),
        after_agent_callbacks: Iterable[AgentCallback] = (),
    ) -> None:
        super().__init__(
            name,
            description,
            before_agent_callbacks=before_agent_callbacks,
            after_agent_callbacks=after_agent_callbacks,
        )
        _check_arguments(name, description, instruction, model, tools, return_directly, max_iterations, exit_tool)
        assert model is not None  # checked just above
        if tool_error not in ("return", "raise"):
            raise ValueError(f"ChatModelAgent {name!r}: tool_error must be 'return' or 'raise', got {tool_error!r}")
        from rillet.tools import as_tool

        self.instruction = instruction
        self.model = model
        self.tools: list[BaseTool] = [as_tool(t) for t in tools]
        self.return_directly = set(return_directly)
        if exit_tool is not None:
            self.tools.append(exit_tool)
            self.return_directly.add(exit_tool.info.name)
        self._by_name: dict[str, BaseTool] = {}
        for t in self.tools:
            tname = t.info.name
            if tname in self._by_name:
                raise ValueError(f"ChatModelAgent {name!r}: two tools are named {tname!r}; tool names must be unique")
            self._by_name[tname] = t
        unknown = self.return_directly - set(self._by_name)
        if unknown:
            raise ValueError(
                f"ChatModelAgent {name!r}: return_directly names tools it does not have: {sorted(unknown)}"
            )
        self.max_iterations = max_iterations if max_iterations > 0 else 20
        self.output_key = output_key
        self.gen_model_input = gen_model_input
        self.execute_tools_sequentially = execute_tools_sequentially
        self.tool_error = tool_error
        self.before_model: list[BeforeModel] = _as_list(before_model)
        self.after_model: list[AfterModel] = _as_list(after_model)
        self.wrap_tool_call: list[ToolWrapper] = _as_list(wrap_tool_call)
        self.before_agent: list[BeforeAgent] = _as_list(before_agent)
        self.after_agent: list[AfterAgent] = _as_list(after_agent)
        self.model_options = dict(model_options or {})
        self._tool_infos: list[ToolInfo] = [t.info for t in self.tools]
        self._emits = any(getattr(t, "emit_internal_events", False) for t in self.tools)
        self._sub_agents: list[Any] = []
        self._parent: Any = None
        self._disallow_transfer_to_parent = False
        self._transfer_instruction = ""
        self._frozen = False

    # --- transfer wiring (called by set_sub_agents) --------------------------------------

    def on_set_sub_agents(self, sub_agents: list[Any]) -> None:
        """Called by :func:`rillet.set_sub_agents`: this agent may transfer to ``sub_agents``."""
        self._check_not_frozen()
        if self._sub_agents:
            raise ValueError(f"ChatModelAgent {self.name!r}: sub-agents are already set")
        self._sub_agents = list(sub_agents)
        self._wire_transfer()

    def on_set_as_sub_agent(self, parent: Any) -> None:
        """Called by :func:`rillet.set_sub_agents`: ``parent`` is this agent's parent."""
        self._check_not_frozen()
        if self._parent is not None:
            raise ValueError(f"ChatModelAgent {self.name!r}: it already has a parent, {self._parent.name!r}")
        self._parent = parent
        self._wire_transfer()

    def on_disallow_transfer_to_parent(self) -> None:
        """This agent may not transfer back to its parent."""
        self._check_not_frozen()
        self._disallow_transfer_to_parent = True
        self._wire_transfer()

    def _check_not_frozen(self) -> None:
        if self._frozen:
            raise RuntimeError(f"ChatModelAgent {self.name!r} has already run: set its sub-agents before the first run")

    def _wire_transfer(self) -> None:
        """Adds (or removes) the transfer tool and instruction for the current targets."""
        from rillet.flow import TRANSFER_TOOL_NAME, transfer_instruction, transfer_tool

        targets = list(self._sub_agents)
        if self._parent is not None and not self._disallow_transfer_to_parent:
            targets.append(self._parent)
        self.tools = [t for t in self.tools if t.info.name != TRANSFER_TOOL_NAME]
        self._by_name.pop(TRANSFER_TOOL_NAME, None)
        self.return_directly.discard(TRANSFER_TOOL_NAME)
        self._transfer_instruction = transfer_instruction(targets) if targets else ""
        if targets:
            t = transfer_tool()
            self.tools.append(t)
            self._by_name[TRANSFER_TOOL_NAME] = t
            self.return_directly.add(TRANSFER_TOOL_NAME)
        self._tool_infos = [t.info for t in self.tools]
        self._emits = any(getattr(t, "emit_internal_events", False) for t in self.tools)

    # --- the run ----------------------------------------------------------------------

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        self._frozen = True
        run = current_run()
        saved = run.point.state if run is not None and run.point.was_interrupted else None
        streaming = input.enable_streaming
        infos = self._tool_infos
        model_opts = {**self.model_options, **options.get("model_options", {})}
        if isinstance(saved, dict) and saved.get("kind") == _STATE_KIND:
            # Resumed: the conversation as it was, and the interrupted round rerun for the
            # calls that had not completed (completed results are reused, not recomputed).
            state: list[Message] = list(saved["messages"])
            remaining, iteration = int(saved["remaining"]), int(saved["iteration"])
            outcome = _RoundOutcome()
            round_ = self._round(state, streaming, remaining, iteration, dict(saved["completed"]), outcome, saved.get("final"))
        else:
            for cb in self.before_agent:
                changed = await _maybe_await(cb(input))
                if changed is not None:
                    input = changed
            state = list(await self._model_input(input))
            remaining = self.max_iterations if infos else 1
            iteration = 0
            outcome = _RoundOutcome()
            round_ = None
        while True:
            if round_ is not None:
                async for ev in round_:
                    yield ev
                if outcome.interrupted:
                    return
                if outcome.ends:
                    await self._finish(state, outcome.final_text)
                    return
            if remaining <= 0:
                raise ExceedMaxIterationsError(
                    f"ChatModelAgent {self.name!r} exceeds max iterations ({self.max_iterations} model calls)"
                )
            remaining -= 1
            iteration += 1
            mctx = ModelContext(self.name, iteration, state, infos) if self.before_model or self.after_model else None
            for before in self.before_model:
                new_state = await _maybe_await(before(mctx))  # type: ignore[arg-type]
                if new_state is not None:
                    state[:] = new_state  # persisted, as Eino's BeforeModelRewriteState
            if streaming:
                stream = await _awaited(self.model.stream(state, tools=infos or None, **model_opts), self.model, "stream")
                if not isinstance(stream, StreamReader):
                    raise TypeError(
                        f"{type(self.model).__name__}.stream returned {type(stream).__name__}; a ChatModel's stream "
                        "must return a rillet StreamReader of Message chunks (e.g. rillet.stream_from_list([...]))"
                    )
                user_copy, own = stream.copy(2)
                yield event_from_message(None, user_copy)
                reply = await aconcat_message_stream(own)
            else:
                reply = await _awaited(self.model.generate(state, tools=infos or None, **model_opts), self.model, "generate")
                if type(reply) is not Message:
                    raise TypeError(
                        f"{type(self.model).__name__}.generate returned {type(reply).__name__}; "
                        "a ChatModel's generate must return a rillet.Message"
                    )
                yield event_from_message(reply.copy())
            for after in self.after_model:
                replaced = await _maybe_await(after(mctx, reply))  # type: ignore[arg-type]
                if replaced is not None:
                    reply = replaced
            state.append(reply)
            calls = reply.tool_calls
            if not calls or not infos:
                await self._finish(state, reply.content)
                return
            if len(calls) == 1 and not self._emits:
                # The common round, inline: one call, no task, no round generator.
                c = calls[0]
                try:
                    ev, msg = await self._call_tool(c.function.name, c.id, c.function.arguments, state, streaming)
                except Interrupted as e:
                    snapshot = _snapshot(state, {}, remaining, iteration)
                    yield composite_interrupt_event(None, snapshot, e)
                    return
                yield ev
                if not isinstance(msg, Message):
                    try:
                        msg = await joined(msg)
                    except Interrupted as e:  # a streaming tool interrupted part-way
                        yield composite_interrupt_event(None, _snapshot(state, {}, remaining, iteration), e)
                        return
                state.append(msg)
                if c.function.name in self.return_directly:
                    await self._finish(state, state[-1].content)
                    return
                round_ = None
                continue
            outcome = _RoundOutcome()
            round_ = self._round(state, streaming, remaining, iteration, {}, outcome)

    async def _model_input(self, input: AgentInput) -> list[Message]:
        if self.gen_model_input is not None:
            return list(await _maybe_await(self.gen_model_input(self.instruction, input)))
        instruction = self.instruction
        if self._transfer_instruction:
            instruction = f"{instruction}\n\n{self._transfer_instruction}" if instruction else self._transfer_instruction
        instruction = self._format_instruction(instruction)
        if not instruction:
            return list(input.messages)
        return [Message.system(instruction), *input.messages]

    def _format_instruction(self, instruction: str) -> str:
        run = current_run()
        if not instruction or run is None:
            return instruction
        with run.session.lock:
            values = dict(run.session.values)
        if not values:
            return instruction
        try:
            return instruction.format_map(values)
        except (KeyError, ValueError, IndexError, AttributeError) as e:
            raise ValueError(
                f"ChatModelAgent {self.name!r}: the instruction is formatted with the session values "
                f"({', '.join(sorted(values))}) and failed: {e!r}. Double literal braces ({{{{ and }}}}) or "
                "pass gen_model_input to build the model input yourself"
            ) from e

    async def _finish(self, state: list[Message], text: str) -> None:
        if self.output_key is not None:
            add_session_value(self.output_key, text)
        for after in self.after_agent:
            await _maybe_await(after(state))

    # --- tools ------------------------------------------------------------------------

    async def _round(
        self,
        state: list[Message],
        streaming: bool,
        remaining: int,
        iteration: int,
        completed: dict[str, Message],
        outcome: _RoundOutcome,
        saved_final: list[Any] | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """One tool round for the calls of ``state[-1]``: events as calls finish; a
        return-directly event held to the end; an interrupt of any call (after every call
        has finished) becomes one composite interrupt of this agent, saving what it needs
        to rerun only the calls that did not complete. Calls are told apart by position
        (ids may repeat or be empty). ``saved_final``: the records of the return-directly
        event an interrupted run of this round saved (it carries the call's action)."""
        from rillet.checkpoint.payload import events_to_records, records_to_events

        calls = state[-1].tool_calls
        direct = final_position(calls, self)
        final: AgentEvent | None = None
        signals: list[Any] = []
        results: dict[int, Message] = {int(k): v for k, v in completed.items()}
        pending = [(i, c) for i, c in enumerate(calls) if i not in results]
        async for ev, pos, msg in self._tool_calls(pending, state, streaming):
            if isinstance(ev, Interrupted):
                signals.append(ev)
                continue
            if msg is not None:
                results[pos] = msg
            if ev is None:  # a streaming tool's result, joined after its event
                continue
            if pos >= 0 and pos == direct:
                final = ev
            else:
                yield ev
        if signals:
            outcome.interrupted = True
            saved = {str(i): m for i, m in results.items()}
            snapshot = _snapshot(state, saved, remaining, iteration)
            if final is not None and final.action is not None:  # an exit or transfer: kept for the resumed round
                snapshot["final"] = await events_to_records([final])
            yield composite_interrupt_event(None, snapshot, *signals)
            return
        state.extend(results[i] for i in range(len(calls)) if i in results)
        if direct >= 0:
            if final is None and saved_final:  # it completed before an interrupt, with an action
                final = records_to_events(saved_final)[0]
            elif final is None and direct in results:  # it completed before an interrupt
                final = event_from_message(results[direct].copy(), role="tool", tool_name=results[direct].tool_name)
            outcome.ends = True
            outcome.final_text = results[direct].content if direct in results else ""
            if final is not None:
                yield final

    async def _tool_calls(
        self, calls: Sequence[tuple[int, ToolCall]], state: list[Message], streaming: bool
    ) -> AsyncIterator[tuple[Any, int, Message | None]]:
        """Runs ``(position, call)`` pairs (concurrently unless told otherwise); yields
        (event, position, tool message) as each call returns (a streaming tool's event before
        its stream is read: its message is then None and comes later), or (Interrupted,
        position, None). Events that tools emit (agent tools with ``emit_internal_events``)
        are yielded as they come, with position -1."""
        futures: dict[int, asyncio.Future[Message]] = {}
        inbox: Inbox[tuple[str, Any]] = Inbox()
        emit = (lambda ev: inbox.put_nowait(("event", ev))) if self._emits else None
        if emit is None and (len(calls) == 1 or self.execute_tools_sequentially):
            for pos, c in calls:
                yield _settle(pos, await self._attempt(c, state, streaming, None), futures)
        else:
            gate = asyncio.Lock() if self.execute_tools_sequentially else None

            async def one(c: ToolCall) -> tuple[Any, Message | asyncio.Future[Message] | None]:
                if gate is None:
                    return await self._attempt(c, state, streaming, emit)
                async with gate:
                    return await self._attempt(c, state, streaming, emit)

            tasks = {child_task(one(c)): pos for pos, c in calls}
            for t in tasks:
                t.add_done_callback(lambda t: inbox.put_nowait(("done", t)))
            try:
                left = len(tasks)
                while left:
                    kind, item = await inbox.get()  # emitted events and finished calls, as they come
                    if kind == "event":
                        yield item, -1, None
                        continue
                    left -= 1
                    yield _settle(tasks[item], result_of(item), futures)
            finally:
                for t in tasks:
                    t.cancel()
        for pos, fut in futures.items():  # streaming tools' concatenated results
            try:
                yield None, pos, await joined(fut)
            except Interrupted as e:  # the stream interrupted part-way
                yield e, pos, None

    async def _attempt(
        self, c: ToolCall, state: list[Message], streaming: bool, emit: Callable[[AgentEvent], None] | None
    ) -> tuple[Any, Message | asyncio.Future[Message] | None]:
        """One call's (event, result), or (the Interrupted it raised, None)."""
        try:
            return await self._call_tool(c.function.name, c.id, c.function.arguments, state, streaming, emit)
        except Interrupted as e:
            return e, None

    async def _call_tool(
        self,
        name: str,
        call_id: str,
        arguments: str,
        state: list[Message] | None = None,
        streaming: bool = False,
        emit: Callable[[AgentEvent], None] | None = None,
    ) -> tuple[AgentEvent, Message | asyncio.Future[Message]]:
        resume = current_resume()
        if resume is None:
            scope = ToolCallScope(name, call_id, None, state, streaming, emit)
        else:
            run = current_run()
            point = resume.enter((*(run.address if run else ()), f"tool:{name}:{call_id}"))
            scope = ToolCallScope(name, call_id, None, state, streaming, emit, point)
        token = _TOOL_CALL.set(scope)
        try:
            tool = self._by_name.get(name)
            if tool is not None and tool.is_streaming:
                return await self._stream_tool(tool, scope, arguments)
            content = await self._invoke(tool, name, call_id, arguments)
            if isinstance(content, Interrupted):  # returned instead of raised (a BaseTool, a wrapper)
                raise content
        finally:
            with contextlib.suppress(ValueError):  # closed by the GC, outside its context, after its loop closed
                _TOOL_CALL.reset(token)
        msg = Message.tool_message(content, call_id, name)
        ev = event_from_message(msg.copy(), role="tool", tool_name=name)
        if scope.action is not None:
            ev.action = scope.action
        return ev, msg

    async def _invoke(self, tool: BaseTool | None, name: str, call_id: str, arguments: str) -> str:
        if tool is not None and not self.wrap_tool_call:
            try:
                result: str = await tool.invoke(arguments)
                return result
            except Interrupted:
                raise
            except Exception as e:
                return self._tool_failed(name, call_id, e)

        async def call(args: str) -> str:
            if tool is None:
                raise LookupError(
                    f"tool {name!r} not found; the agent {self.name!r} has: {', '.join(self._by_name) or 'no tools'}"
                )
            result: str = await tool.invoke(args)
            return result

        endpoint: Callable[[str], Awaitable[str]] = call
        for wrapper in reversed(self.wrap_tool_call):  # the first wrapper is the outermost
            endpoint = _bind(wrapper, ToolCallContext(self.name, name, call_id, arguments), endpoint)
        try:
            return await endpoint(arguments)
        except Interrupted:
            raise
        except Exception as e:
            return self._tool_failed(name, call_id, e)

    def _tool_failed(self, name: str, call_id: str, e: Exception) -> str:
        """A failed call: its error text for the model, or (``tool_error="raise"``) the end."""
        if self.tool_error == "raise":
            raise ToolCallError(f"failed to invoke tool[name:{name} id:{call_id}]: {e}") from e
        _log_tool_error(self.name, name, call_id, e)
        return f"Error: {e}"

    async def _stream_tool(
        self, tool: BaseTool, scope: ToolCallScope, arguments: str
    ) -> tuple[AgentEvent, asyncio.Future[Message]]:
        """A streaming tool (its native flavour, whatever the run's mode): its event carries a
        stream of tool-message chunks, emitted once the first chunk is there (so an action the
        tool sends before its first chunk is on the event); the state gets their concatenation.
        An interrupt before the first chunk interrupts the call; one after it, once the stream
        ends. Tool-call wrappers apply to invoked tools only."""
        name, call_id = scope.tool_name, scope.call_id
        reader, writer = pipe()
        user_copy, own = reader.copy(2)
        started = asyncio.Event()
        interrupted: list[Interrupted] = []

        async def produce() -> None:
            try:
                async for piece in tool.stream(arguments):
                    if isinstance(piece, Interrupted):  # yielded instead of raised
                        raise piece
                    writer.send(Message(role="tool", content=piece, tool_call_id=call_id, tool_name=name))
                    started.set()
                    if writer.reader_closed:  # every reader is gone: stop producing
                        break
            except Interrupted as e:
                interrupted.append(e)
            except (KeyboardInterrupt, SystemExit) as e:  # ends the run; the stream says it was cut short
                writer.send_error(ToolCallError(f"tool call {call_id} raised {type(e).__name__}"))
                raise
            except Exception as e:
                if self.tool_error == "raise":
                    writer.send_error(ToolCallError(f"failed to stream tool call {call_id}: {e}"))
                else:
                    _log_tool_error(self.name, name, call_id, e)
                    writer.send(Message(role="tool", content=f"Error: {e}", tool_call_id=call_id, tool_name=name))
            finally:
                started.set()
                writer.close()

        producer = child_task(produce())  # runs with the tool-call scope set
        await started.wait()
        if interrupted and producer.done():
            user_copy.close()
            own.close()
            raise interrupted[0]

        async def concat() -> Message:
            try:
                msg = await aconcat_message_stream(own)
            except GeneratorExit:  # destroyed with its closed loop: nothing can be awaited now
                raise
            except BaseException:
                await producer
                raise
            await producer
            if interrupted:
                raise interrupted[0]
            return msg if msg.role else Message.tool_message("", call_id, name)

        result = child_task(concat())
        ev = event_from_message(None, user_copy, role="tool", tool_name=name)
        if scope.action is not None:
            ev.action = scope.action
        return ev, result


def _log_tool_error(agent: str, tool: str, call_id: str, e: Exception) -> None:
    """A tool error sent to the model as the call's result: one line at WARNING, the
    traceback at DEBUG."""
    _log.warning("agent %r: tool %r (call %s) failed, sent to the model: %s: %s", agent, tool, call_id, type(e).__name__, e)
    _log.debug("agent %r: tool %r (call %s) traceback", agent, tool, call_id, exc_info=e)


def _bind(
    wrapper: ToolWrapper, ctx: ToolCallContext, inner: Callable[[str], Awaitable[str]]
) -> Callable[[str], Awaitable[str]]:
    async def call(args: str) -> str:
        ctx.arguments = args
        return await wrapper(ctx, inner)

    return call


_STATE_KIND = "rillet.chatmodel.round"


def _settle(
    pos: int, outcome: tuple[Any, Message | asyncio.Future[Message] | None], futures: dict[int, asyncio.Future[Message]]
) -> tuple[Any, int, Message | None]:
    """A finished call as (event or Interrupted, position, message); a streaming tool's
    result is still coming: it is parked in ``futures`` and its message is None for now."""
    ev, msg = outcome
    if msg is None or isinstance(msg, Message):
        return ev, pos, msg
    futures[pos] = msg
    return ev, pos, None


def _snapshot(state: list[Message], completed: dict[str, Message], remaining: int, iteration: int) -> dict[str, Any]:
    """What an interrupted round saves: the conversation up to the tool-call message, the
    results of the calls that completed, and the loop's counters."""
    return {
        "kind": _STATE_KIND,
        "messages": list(state),
        "completed": completed,
        "remaining": remaining,
        "iteration": iteration,
    }


class _RoundOutcome:
    """How a tool round ended: interrupted, or ending the run (a return-directly tool)."""

    __slots__ = ("ends", "final_text", "interrupted")

    def __init__(self) -> None:
        self.interrupted = False
        self.ends = False
        self.final_text = ""


def final_position(calls: Sequence[ToolCall], agent: ChatModelAgent) -> int:
    """The position of the round's return-directly call (-1 if none); the last one wins."""
    found = -1
    for i, c in enumerate(calls):
        if c.function.name in agent.return_directly:
            found = i
    return found
