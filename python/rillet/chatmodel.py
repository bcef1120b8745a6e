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
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rillet._native import Message, RilletError, ToolCall, pipe
from rillet.agent import AgentInput, BaseAgent
from rillet.context import _TOOL_CALL, ToolCallScope, add_session_value, current_run
from rillet.events import AgentEvent, event_from_message
from rillet.schema import aconcat_message_stream

if TYPE_CHECKING:
    from rillet.models.base import ChatModel
    from rillet.tools import BaseTool, ToolInfo

__all__ = [
    "ChatModelAgent",
    "ExceedMaxIterationsError",
    "ModelContext",
    "ToolCallContext",
    "ToolCallError",
]


class ExceedMaxIterationsError(RilletError):
    """The ReAct loop asked the model more often than ``max_iterations`` allows."""


class ToolCallError(RilletError):
    """A tool call failed and the agent was told to stop (``tool_error="raise"``)."""


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
    ) -> None:
        super().__init__(name, description)
        if model is None:
            raise ValueError(f"ChatModelAgent {name!r}: model is required (for example ScriptedModel([...]))")
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

    # --- the run ----------------------------------------------------------------------

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for cb in self.before_agent:
            changed = await _maybe_await(cb(input))
            if changed is not None:
                input = changed
        state = list(await self._model_input(input))
        streaming = input.enable_streaming
        infos = self._tool_infos
        model_opts = {**self.model_options, **options.get("model_options", {})}
        remaining = self.max_iterations if infos else 1
        iteration = 0
        while True:
            if remaining <= 0:
                raise ExceedMaxIterationsError(
                    f"ChatModelAgent {self.name!r} exceeds max iterations ({self.max_iterations} model calls)"
                )
            remaining -= 1
            iteration += 1
            mctx = ModelContext(self.name, iteration, state, infos)
            for before in self.before_model:
                new_state = await _maybe_await(before(mctx))
                if new_state is not None:
                    state[:] = new_state  # persisted, as Eino's BeforeModelRewriteState
            if streaming:
                stream = await self.model.stream(state, tools=infos or None, **model_opts)
                user_copy, own = stream.copy(2)
                yield event_from_message(None, user_copy)
                reply = await aconcat_message_stream(own)
            else:
                reply = await self.model.generate(state, tools=infos or None, **model_opts)
                yield event_from_message(reply.copy())
            for after in self.after_model:
                replaced = await _maybe_await(after(mctx, reply))
                if replaced is not None:
                    reply = replaced
            state.append(reply)
            calls = reply.tool_calls
            if not calls or not infos:
                await self._finish(state, reply.content)
                return
            final: AgentEvent | None = None
            async for ev, direct in self._tool_round(calls, state):
                if direct:
                    final = ev  # held until the whole round is done, then it ends the run
                else:
                    yield ev
            if final is not None:
                direct_id = final_id(calls, self)
                text = next((m.content for m in state if m.role == "tool" and m.tool_call_id == direct_id), "")
                yield final
                await self._finish(state, text)
                return

    async def _model_input(self, input: AgentInput) -> list[Message]:
        if self.gen_model_input is not None:
            return list(await _maybe_await(self.gen_model_input(self.instruction, input)))
        instruction = self._format_instruction(self.instruction)
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

    async def _tool_round(self, calls: Sequence[ToolCall], state: list[Message]) -> AsyncIterator[tuple[AgentEvent, bool]]:
        """Runs one round of tool calls; yields (event, is_return_directly) as each call
        returns (a streaming tool's event before its stream is read), then appends the tool
        messages to ``state`` in call order."""
        direct_id = final_id(calls, self)
        results: list[Message | asyncio.Future[Message] | None] = [None] * len(calls)
        if len(calls) == 1 or self.execute_tools_sequentially:
            for i, c in enumerate(calls):
                ev, results[i] = await self._call_tool(c.function.name, c.id, c.function.arguments)
                yield ev, bool(direct_id) and c.id == direct_id
        else:
            tasks: dict[asyncio.Future[tuple[AgentEvent, Message | asyncio.Future[Message]]], int] = {
                asyncio.ensure_future(self._call_tool(c.function.name, c.id, c.function.arguments)): i
                for i, c in enumerate(calls)
            }
            finished: asyncio.Queue[asyncio.Future[tuple[AgentEvent, Message | asyncio.Future[Message]]]] = (
                asyncio.Queue()
            )
            for t in tasks:
                t.add_done_callback(finished.put_nowait)
            try:
                for _ in range(len(tasks)):
                    t = await finished.get()  # completion order
                    i = tasks[t]
                    ev, results[i] = t.result()
                    yield ev, bool(direct_id) and calls[i].id == direct_id
            finally:
                for t in tasks:
                    t.cancel()
        for r in results:
            if r is not None:
                state.append(r if isinstance(r, Message) else await r)

    async def _call_tool(
        self, name: str, call_id: str, arguments: str
    ) -> tuple[AgentEvent, Message | asyncio.Future[Message]]:
        scope = ToolCallScope(name, call_id)
        token = _TOOL_CALL.set(scope)
        try:
            tool = self._by_name.get(name)
            if tool is not None and tool.is_streaming:
                return self._stream_tool(tool, scope, arguments)
            content = await self._invoke(tool, name, call_id, arguments)
        finally:
            _TOOL_CALL.reset(token)
        msg = Message.tool_message(content, call_id, name)
        ev = event_from_message(msg.copy(), role="tool", tool_name=name)
        if scope.action is not None:
            ev.action = scope.action
        return ev, msg

    async def _invoke(self, tool: BaseTool | None, name: str, call_id: str, arguments: str) -> str:
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
        except Exception as e:
            if self.tool_error == "raise":
                raise ToolCallError(f"failed to invoke tool[name:{name} id:{call_id}]: {e}") from e
            return f"Error: {e}"

    def _stream_tool(
        self, tool: BaseTool, scope: ToolCallScope, arguments: str
    ) -> tuple[AgentEvent, asyncio.Future[Message]]:
        """A streaming tool (its native flavour, whatever the run's mode): the event carries
        a stream of tool-message chunks and is emitted before the stream is read; the state
        gets their concatenation. Tool-call wrappers apply to invoked tools only."""
        name, call_id = scope.tool_name, scope.call_id
        reader, writer = pipe()
        user_copy, own = reader.copy(2)

        async def produce() -> None:
            try:
                async for piece in tool.stream(arguments):
                    writer.send(Message(role="tool", content=piece, tool_call_id=call_id, tool_name=name))
                    if writer.reader_closed:  # every reader is gone: stop producing
                        break
            except Exception as e:
                if self.tool_error == "raise":
                    writer.send_error(ToolCallError(f"failed to stream tool call {call_id}: {e}"))
                else:
                    writer.send(Message(role="tool", content=f"Error: {e}", tool_call_id=call_id, tool_name=name))
            finally:
                writer.close()

        async def concat() -> Message:
            producer = asyncio.ensure_future(produce())  # runs with the tool-call scope set
            try:
                msg = await aconcat_message_stream(own)
            finally:
                await producer
            return msg if msg.role else Message.tool_message("", call_id, name)

        result = asyncio.ensure_future(concat())
        ev = event_from_message(None, user_copy, role="tool", tool_name=name)
        if scope.action is not None:
            ev.action = scope.action
        return ev, result


def _bind(
    wrapper: ToolWrapper, ctx: ToolCallContext, inner: Callable[[str], Awaitable[str]]
) -> Callable[[str], Awaitable[str]]:
    async def call(args: str) -> str:
        ctx.arguments = args
        return await wrapper(ctx, inner)

    return call


def final_id(calls: Sequence[ToolCall], agent: ChatModelAgent) -> str:
    """The id of the round's return-directly call ("" if none); the last such call wins."""
    found = ""
    for c in calls:
        if c.function.name in agent.return_directly:
            found = c.id
    return found
