"""ChatModelAgent: its configuration, transfer wiring, model input, and the driver of the
ReAct loop's steps (:mod:`rillet.chatmodel.steps`)."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Literal

from rillet._core.scope import PLUGINS
from rillet.chatmodel.callbacks import Callbacks
from rillet.chatmodel.config import (
    AfterAgent,
    AfterModel,
    AfterTool,
    BeforeAgent,
    BeforeModel,
    BeforeTool,
    GenModelInput,
    OnModelError,
    OnToolError,
    ToolWrapper,
    as_list,
    check_arguments,
)
from rillet.chatmodel.deps import ReactDeps
from rillet.chatmodel.guardrails import (
    GuardrailFunction,
    InputGuardrail,
    OutputGuardrail,
    as_input_guardrails,
    as_output_guardrails,
)
from rillet.chatmodel.live import run_live
from rillet.chatmodel.middleware import (
    ChatModelAgentContext,
    ChatModelAgentMiddleware,
    Hooks,
    callback_middlewares,
    hook_failed,
)
from rillet.chatmodel.output import OUTPUT_TOOL_NAME, output_spec
from rillet.chatmodel.state import ReactLoop, RoundState, Step
from rillet.chatmodel.steps import call_model, finish, guard_input, start_round, store_output
from rillet.chatmodel.task import FinishTaskTool, check_mode, delegation_tool, mode_of
from rillet.checkpoint.journal import JOURNAL
from rillet.checkpoint.state import saved_state
from rillet.data.events import AgentEvent
from rillet.flow import TRANSFER_TOOL_NAME, transfer_instruction, transfer_tool
from rillet.run.agent import AgentCallback, AgentInput, BaseAgent
from rillet.run.context import RunContext, current_run, host_agent_run
from rillet.tools import as_tool, build_schemas
from rillet.tools.toolset import check_toolset, is_toolset, toolset_tools

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rillet.live import LiveContext, LiveModel
    from rillet.models.base import ChatModel
    from rillet.tools import BaseTool, ToolInfo
    from rillet.tools.toolset import Toolset

__all__ = ["ChatModelAgent"]


def _emitting(tools: list[BaseTool]) -> bool:
    """Whether a tool sends the events of its inner run (the steps then run calls as tasks)."""
    return any(getattr(t, "emit_internal_events", False) for t in tools)


def _between_steps(loop: ReactLoop) -> bool:
    """Whether the loop stands between two steps of the run as a user sees them: no tool round
    under way, no streamed tool result or model reply still to be read."""
    return loop.round is None and loop.joining is None and loop.reply is None


_NO_HOOKS = Hooks.of("", [])  # shared by the agents without hooks (read, never changed)
_NO_HOOK_SOURCES: tuple[tuple[object, ...], ...] = ((),) * 4


class ChatModelAgent(BaseAgent):
    """An agent that runs the ReAct loop over ``model`` and ``tools``. Everything after
    ``name`` is passed by keyword.

    Args:
        name: the agent's name (events, transfer, agent tools).
        description: what it does, for agents that may call or transfer to it.
        instruction: the system prompt. When the run has session values it is formatted with
            them (``"Hello {user}"``); otherwise it is used verbatim.
        model: a :class:`~rillet.models.ChatModel` (``generate`` and ``stream``).
        tools: tools (``@tool`` functions, :class:`~rillet.tools.BaseTool`), plain functions,
            and toolsets (:class:`~rillet.tools.toolset.Toolset`, such as
            :class:`~rillet.mcp.McpToolset`): each run asks every toolset for its tools before
            the model is first called (they follow the other tools; see docs/tools.md).
        return_directly: names of tools whose result ends the run (after the round).
        max_iterations: most model calls per run (default 20); the next one fails with
            :class:`ExceedMaxIterationsError`.
        exit_tool: a tool (such as :class:`~rillet.tools.ExitTool`) that ends the run; it is
            added to the tools and returns directly.
        output_key: store the final answer's text in the session under this key (the
            validated object, with ``output_type``).
        output_type: a pydantic model class the answer must validate against; the validated
            object is the ``customized_output`` of the run's last event (see
            docs/structured-output.md).
        output_retries: how many times an answer that fails ``output_type`` goes back to the
            model with the problems (default 1) before the run fails with
            :class:`OutputValidationError`.
        gen_model_input: ``(instruction, input) -> messages`` replaces the default
            ``[system(instruction)] + input.messages``.
        execute_tools_sequentially: run a round's tool calls one after another.
        tool_error: ``"return"`` (default) sends a failed tool's error text back to the model
            as its result; ``"raise"`` ends the run with an error event (Eino's behaviour).
        before_model, after_model, on_model_error, before_tool, after_tool, on_tool_error:
            ADK-style callbacks (sync or async; one or a list) around each model and tool call:
            the first that returns something other than None short-circuits the call,
            replaces its result or recovers from its error (see docs/callbacks.md). The
            Runner's plugins' hooks of the same names run first.
        wrap_tool_call, before_agent, after_agent: callbacks (sync or async; one or a list),
            each a middleware, run before those of ``middlewares``.
        middlewares: :class:`~rillet.ChatModelAgentMiddleware` instances, in order (the first
            one's hooks run first, its wrappers are the outermost); see docs/middleware.md.
        model_options: keyword options passed to every model call.
        input_guardrails: checks of the run's input (functions, plain or ``async``, of a
            :class:`~rillet.GuardrailContext`, or :class:`~rillet.InputGuardrail`), run before
            the first model call, or beside it when marked ``concurrent``; a
            :class:`~rillet.GuardrailRejection` ends the run with an
            :class:`~rillet.InputRejectedError` event and no model output. A resumed run does
            not run them again. See docs/guardrails.md.
        output_guardrails: checks of the final answer (functions or
            :class:`~rillet.OutputGuardrail`): a rejection ends the run with an
            :class:`~rillet.OutputRejectedError` event, or, with ``retry=True``, sends the
            reason back to the model once.
        before_agent_callbacks, after_agent_callbacks: ADK-Go's agent callbacks around the
            whole call (see :class:`~rillet.run.agent.BaseAgent`).
        mode: how a parent reaches this agent as its sub-agent (ADK-Go's delegation modes):
            ``"chat"`` (default) by ``transfer_to_agent``; ``"single_turn"`` as a tool that runs
            it once on its own branch; ``"task"`` as a task tool: the agent gets the
            ``finish_task`` tool, whose validated arguments (``output_type``'s fields, default
            ``result``) end the task and are its result. See docs/multi-agent.md.
        live_model: a :class:`~rillet.live.LiveModel`, which makes the agent run live with
            :meth:`rillet.Runner.run_live` (see docs/live.md).
    """

    runs_agents_in_its_run = False  # its agent tools run in sessions of their own
    _children_fixed = True  # its transfer targets are set by set_sub_agents (which offers the transfer)
    # the last run's ReactDeps and what it was built from (class defaults: none before a run)
    _deps: ReactDeps | None = None
    _deps_sources: tuple[object, ...] = ()

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        instruction: str = "",
        model: ChatModel | None = None,
        tools: Iterable[Any] = (),
        return_directly: Iterable[str] = (),
        max_iterations: int = 20,
        exit_tool: BaseTool | None = None,
        output_key: str | None = None,
        output_type: type[BaseModel] | None = None,
        output_retries: int = 1,
        gen_model_input: GenModelInput | None = None,
        execute_tools_sequentially: bool = False,
        tool_error: Literal["return", "raise"] = "return",
        before_model: BeforeModel | Iterable[BeforeModel] | None = None,
        after_model: AfterModel | Iterable[AfterModel] | None = None,
        on_model_error: OnModelError | Iterable[OnModelError] | None = None,
        before_tool: BeforeTool | Iterable[BeforeTool] | None = None,
        after_tool: AfterTool | Iterable[AfterTool] | None = None,
        on_tool_error: OnToolError | Iterable[OnToolError] | None = None,
        wrap_tool_call: ToolWrapper | Iterable[ToolWrapper] | None = None,
        before_agent: BeforeAgent | Iterable[BeforeAgent] | None = None,
        after_agent: AfterAgent | Iterable[AfterAgent] | None = None,
        middlewares: Iterable[ChatModelAgentMiddleware] = (),
        model_options: dict[str, Any] | None = None,
        input_guardrails: Iterable[InputGuardrail | GuardrailFunction] = (),
        output_guardrails: Iterable[OutputGuardrail | GuardrailFunction] = (),
        before_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
        after_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
        mode: Literal["chat", "single_turn", "task"] = "chat",
        live_model: LiveModel | None = None,
    ) -> None:
        super().__init__(
            name,
            description,
            before_agent_callbacks=before_agent_callbacks,
            after_agent_callbacks=after_agent_callbacks,
        )
        check_arguments(name, description, instruction, model, tools, return_directly, max_iterations, exit_tool)
        assert model is not None  # checked just above
        if tool_error not in ("return", "raise"):
            raise ValueError(f"ChatModelAgent {name!r}: tool_error must be 'return' or 'raise', got {tool_error!r}")
        self.mode = check_mode(name, mode)
        # a task's typed result is finish_task's arguments, not a final answer
        self._output = output_spec(name, output_type if mode != "task" else None, output_retries, model)
        self.instruction = instruction
        self.model = model
        given = list(tools)
        self.toolsets: list[Toolset] = [t for t in given if is_toolset(t)]
        """The toolsets of ``tools``, asked for their tools at the start of every run."""
        for ts in self.toolsets:
            check_toolset(ts, f"ChatModelAgent {name!r}")
        self.tools: list[BaseTool] = [as_tool(t) for t in given if not is_toolset(t)]
        self._toolset_deps: tuple[ReactDeps, list[BaseTool], ReactDeps, list[BaseTool]] | None = None
        self._finish_task = FinishTaskTool(name, output_type) if mode == "task" else None
        if self._finish_task is not None:
            self.tools.append(self._finish_task)
        self.return_directly = set(return_directly)
        if exit_tool is not None:
            self.tools.append(exit_tool)
            self.return_directly.add(exit_tool.info.name)
        self._by_name: dict[str, BaseTool] = self._index(self.tools, self.return_directly)
        self.max_iterations = max_iterations if max_iterations > 0 else 20
        self.output_key = output_key
        self.gen_model_input = gen_model_input
        self.execute_tools_sequentially = execute_tools_sequentially
        self.tool_error = tool_error
        self.before_model: list[BeforeModel] = as_list(before_model)
        self.after_model: list[AfterModel] = as_list(after_model)
        self.on_model_error: list[OnModelError] = as_list(on_model_error)
        self.before_tool: list[BeforeTool] = as_list(before_tool)
        self.after_tool: list[AfterTool] = as_list(after_tool)
        self.on_tool_error: list[OnToolError] = as_list(on_tool_error)
        self._call_callbacks: Callbacks | None = None
        self._call_callback_sources: tuple[tuple[object, ...], ...] = ()
        self.wrap_tool_call: list[ToolWrapper] = as_list(wrap_tool_call)
        self.before_agent: list[BeforeAgent] = as_list(before_agent)
        self.after_agent: list[AfterAgent] = as_list(after_agent)
        self.middlewares: list[ChatModelAgentMiddleware] = list(middlewares)
        self._hook_sources: tuple[tuple[object, ...], ...] = ()
        self._collect_hooks()
        self.model_options = dict(model_options or {})
        self.input_guardrails = as_input_guardrails(name, input_guardrails)
        self.output_guardrails = as_output_guardrails(name, output_guardrails)
        self._tool_infos: list[ToolInfo] = self._infos(self.tools)
        self._emits = _emitting(self.tools)
        self._sub_agents: list[Any] = []
        self._delegated: list[BaseTool] = []  # the tools for sub-agents in single_turn or task mode
        self._parent: Any = None
        self._disallow_transfer_to_parent = False
        self._transfer_instruction = ""
        self._frozen = False
        if live_model is not None and not callable(getattr(live_model, "connect", None)):
            raise TypeError(
                f"ChatModelAgent {name!r}: live_model must be a rillet.live.LiveModel (async connect(history, tools=...)), "
                f"got {type(live_model).__name__}"
            )
        self.live_model = live_model

    # --- transfer wiring (called by set_sub_agents) --------------------------------------

    def on_set_sub_agents(self, sub_agents: list[Any]) -> None:
        """Called by :func:`rillet.set_sub_agents`: this agent may transfer to ``sub_agents``."""
        self._check_not_frozen()
        if self._sub_agents:
            raise ValueError(f"ChatModelAgent {self.name!r}: sub-agents are already set")
        delegated = [
            delegation_tool(a, m, getattr(a, "_finish_task", None)) for a in sub_agents if (m := mode_of(a)) != "chat"
        ]
        taken = {t.info.name for t in self.tools} & {t.info.name for t in delegated}
        if taken:
            raise ValueError(
                f"ChatModelAgent {self.name!r}: the sub-agents {sorted(taken)} are called as tools (single_turn or "
                "task mode), and it already has tools of those names; rename the agents or the tools"
            )
        self._sub_agents = list(sub_agents)
        self._delegated = delegated
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
        """Adds (or removes) the transfer tool and instruction for the current targets (the
        sub-agents in chat mode; the parent unless disallowed or this agent is called as a
        tool), and the tools of the sub-agents in single_turn or task mode."""
        targets = [a for a in self._sub_agents if mode_of(a) == "chat"]
        if self._parent is not None and not self._disallow_transfer_to_parent and self.mode == "chat":
            targets.append(self._parent)
        self.tools = [t for t in self.tools if t.info.name != TRANSFER_TOOL_NAME and t not in self._delegated]
        self.tools.extend(self._delegated)
        for t in self._delegated:
            self._by_name[t.info.name] = t
        self._by_name.pop(TRANSFER_TOOL_NAME, None)
        self.return_directly.discard(TRANSFER_TOOL_NAME)
        self._transfer_instruction = transfer_instruction(targets) if targets else ""
        if targets:
            t = transfer_tool()
            self.tools.append(t)
            self._by_name[TRANSFER_TOOL_NAME] = t
            self.return_directly.add(TRANSFER_TOOL_NAME)
        self._tool_infos = self._infos(self.tools)
        self._emits = _emitting(self.tools)

    def _index(self, tools: list[BaseTool], return_directly: set[str]) -> dict[str, BaseTool]:
        """The tools by name, checked: unique names, none taken by the final-answer tool, and
        every return-directly name one of them (or, while the toolsets' tools are unknown, of
        theirs: checked again when a run has them)."""
        by_name: dict[str, BaseTool] = {}
        for t in tools:
            tname = t.info.name
            if tname in by_name:
                raise ValueError(
                    f"ChatModelAgent {self.name!r}: two tools are named {tname!r}; tool names must be unique"
                )
            by_name[tname] = t
        if self._output is not None and self._output.tool is not None and OUTPUT_TOOL_NAME in by_name:
            raise ValueError(
                f"ChatModelAgent {self.name!r}: a tool is named {OUTPUT_TOOL_NAME!r}, the name of the final-answer "
                "tool of output_type (the model does not take a response_format); rename the tool"
            )
        unknown = return_directly - set(by_name)
        if unknown and not (self.toolsets and tools is self.tools):
            raise ValueError(
                f"ChatModelAgent {self.name!r}: return_directly names tools it does not have: {sorted(unknown)}"
            )
        return by_name

    def _infos(self, tools: list[BaseTool]) -> list[ToolInfo]:
        """What the model is offered: the tools, and the final-answer tool of output_type."""
        infos = [t.info for t in tools]
        if self._output is not None and self._output.tool is not None:
            infos.append(self._output.tool)
        return infos

    def run_live(self, input: AgentInput, live: LiveContext, **options: Any) -> AsyncIterator[AgentEvent]:
        """The agent's live run over ``live_model`` (see :class:`rillet.live.LiveAgent`);
        raises :class:`~rillet.errors.LiveNotSupportedError` at once without a live model."""
        return run_live(self.name, self.live_model, self._begin_live, input, live, **options)

    async def _begin_live(self) -> ReactDeps:
        """A live run starts: :meth:`_begin_run`, with the toolsets' tools when it has any."""
        deps = self._begin_run()
        return await self._with_toolsets(deps) if self.toolsets else deps

    # --- the run ----------------------------------------------------------------------

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        """Drives the loop: each step returns the next; the events a step produced go out
        before the next step runs. The loop is the run's host for :func:`rillet.send_event`
        and the run-local values while it runs."""
        deps = self._begin_run()
        plugins = PLUGINS.get()
        if plugins is not None:  # the Runner's plugins' hooks, before the agent's callbacks
            callbacks = Callbacks.with_plugins(deps.callbacks, deps.name, plugins)
            if callbacks is not deps.callbacks:
                deps = dataclasses.replace(deps, callbacks=callbacks)
        model_options = {**deps.model_options, **options.get("model_options", {})}
        loop = ReactLoop([], 0, 0, input.enable_streaming, model_options)
        run = current_run()
        previous = host_agent_run(run, loop.hosted()) if run is not None else None
        out = loop.out
        try:
            if self.toolsets:  # their tools, for this run (no await at all without a toolset)
                deps = await self._with_toolsets(deps)
            deps, first = await self._start(deps, input, loop, run)
            build_schemas(deps.tool_infos)  # function tools describe themselves on first use
            step: Step | None = first
            if out:  # what before_agent hooks sent
                for ev in out:
                    yield ev
                out.clear()
            budget = loop.budget
            while step is not None:
                if budget is not None and budget.ended is not None and _between_steps(loop):
                    break  # end_invocation (before this run, or in the step that finished): nothing else runs
                step = await step(deps, loop)
                if step is finish:  # the answer: its event, not gone out yet, carries output_key's delta
                    store_output(deps, loop)
                if out:
                    for ev in out:
                        yield ev
                    out.clear()
        finally:
            loop.close()
            if run is not None:
                host_agent_run(run, previous)

    def _begin_run(self) -> ReactDeps:
        """A run (or live run) starts: the agent is frozen (its sub-agents are set), its hooks
        collected again if their sources changed, and what the run's steps read is taken from
        it, as a :class:`ReactDeps`: the last run's, unless one of its sources is another object
        now (an attribute set since; the record holds the same objects, so what was changed in
        place is seen either way). Comparing is a third of the cost of building one."""
        self._frozen = True
        self._collect_hooks()
        sources = (
            self.name,
            self.model,
            self._by_name,
            self._tool_infos,
            self.return_directly,
            self._emits,
            self._hooks,
            self._tool_wrappers,
            self._output,
            self.output_key,
            self.input_guardrails,
            self.output_guardrails,
            self.max_iterations,
            self.execute_tools_sequentially,
            self.tool_error,
            self.mode,
            self.instruction,
            self._transfer_instruction,
            self.gen_model_input,
            self.model_options,
            self.live_model,
            self._call_callbacks,
        )
        deps = self._deps
        if deps is None or not all(map(operator.is_, sources, self._deps_sources)):  # by identity, not ==
            deps = self._deps = ReactDeps(*sources)
            self._deps_sources = sources
        return deps

    async def _with_toolsets(self, deps: ReactDeps) -> ReactDeps:
        """``deps`` with the tools the toolsets offer now, after the agent's own. The record
        of the last run is reused while every toolset offers the same tool objects."""
        where = f"ChatModelAgent {self.name!r}"
        offered = [(ts, await toolset_tools(ts, where)) for ts in self.toolsets]
        found = [t for _, ts_tools in offered for t in ts_tools]
        cached = self._toolset_deps
        if (
            cached is not None
            and cached[0] is deps
            and len(cached[1]) == len(found)
            and all(map(operator.is_, found, cached[1]))
        ):
            return cached[2]
        source: dict[str, str] = {t.info.name: "one of its own tools" for t in self.tools}
        for ts, ts_tools in offered:
            for t in ts_tools:
                name = t.info.name
                if name in source:
                    raise ValueError(
                        f"{where}: the toolset {ts!r} offers a tool named {name!r}, and so does {source[name]}; "
                        "tool names must be unique (give the toolset a prefix, leave the tool out with its filter, "
                        "or rename the other tool)"
                    )
                source[name] = f"the toolset {ts!r}"
        tools = [*self.tools, *found]
        index = self._index(tools, deps.return_directly)
        new = deps.with_tools(deps.instruction, index, self._infos(tools), deps.return_directly, _emitting(tools))
        self._toolset_deps = (deps, found, new, tools)
        return new

    def _run_tools(self, deps: ReactDeps) -> list[BaseTool]:
        """The tools of the run ``deps`` is for: the agent's own, and its toolsets' if any."""
        cached = self._toolset_deps
        return cached[3] if cached is not None and cached[2] is deps else self.tools

    async def _start(
        self, deps: ReactDeps, input: AgentInput, loop: ReactLoop, run: RunContext | None
    ) -> tuple[ReactDeps, Step]:
        """What this run uses (``deps``, or what :meth:`_before_agent` made of it), with the
        loop's first state, and the first step: a resumed run reruns its interrupted round with
        the conversation as it was (completed results are reused, not recomputed); a new run
        calls the model with the agent's input."""
        saved = run.point.state if run is not None and run.point.was_interrupted else None
        if self._output is not None and self._output.tool is None:
            loop.model_options.setdefault("response_format", self._output.type)
        resumed = saved_state(saved, RoundState) if saved is not None else None
        journal = JOURNAL.get()
        if journal is not None and run is not None:  # a step run: record (and replay) its calls
            loop.steps = journal.agent(run.address)
        if resumed is not None:
            loop.messages, loop.remaining, loop.iteration = list(resumed.messages), resumed.remaining, resumed.iteration
            loop.resumed = resumed
            if resumed.locals:
                loop.locals = dict(resumed.locals)
            if deps.hooks.before_agent:
                deps, _ = await self._before_agent(deps, None)
            return deps, start_round
        if deps.hooks.before_agent:
            deps, changed = await self._before_agent(deps, input)
            assert changed is not None  # a new run's input stays an input
            input = changed
        loop.messages = await deps.model_input(input)  # a new list: the run's own to grow
        loop.remaining = deps.max_iterations if deps.tool_infos else 1
        if deps.input_guardrails:
            loop.input_messages = [m.copy() for m in input.messages]
            return deps, guard_input
        return deps, call_model

    def _collect_hooks(self) -> None:
        """(Re)collects the hooks when the callback lists or ``middlewares`` changed since the
        last run: they are public lists, and appending to one after construction must count."""
        if (
            self.before_model
            or self.after_model
            or self.on_model_error
            or self.before_tool
            or self.after_tool
            or self.on_tool_error
        ):
            self._collect_callbacks()
        elif self._call_callbacks is not None:  # (the common agent, with none, pays these six reads)
            self._call_callbacks, self._call_callback_sources = None, ()
        if not (
            self.before_agent or self.wrap_tool_call or self.after_agent or self.middlewares
        ):  # no hook at all, the common agent: nothing to collect (every construction comes here)
            if self._hook_sources is not _NO_HOOK_SOURCES:
                self._hooks, self._tool_wrappers, self._hook_sources = (
                    _NO_HOOKS,
                    _NO_HOOKS.wrap_tool_call,
                    _NO_HOOK_SOURCES,
                )
            return
        sources = (
            tuple(self.before_agent),
            tuple(self.wrap_tool_call),
            tuple(self.after_agent),
            tuple(self.middlewares),
        )
        if sources == self._hook_sources:
            return
        callbacks = callback_middlewares(list(self.before_agent), list(self.wrap_tool_call), list(self.after_agent))
        self._hooks = Hooks.of(self.name, [*callbacks, *self.middlewares])
        self._tool_wrappers = self._hooks.wrap_tool_call  # read on every tool call: one attribute
        self._hook_sources = sources

    def _collect_callbacks(self) -> None:
        """(Re)collects the model and tool callbacks when their lists changed (public lists,
        like the hooks': appending to one after construction counts)."""
        lists = (
            self.before_model,
            self.after_model,
            self.on_model_error,
            self.before_tool,
            self.after_tool,
            self.on_tool_error,
        )
        sources: tuple[tuple[Any, ...], ...] = tuple(tuple(fns) for fns in lists)
        if sources != self._call_callback_sources:
            self._call_callbacks = Callbacks.of(self.name, sources)
            self._call_callback_sources = sources

    async def _before_agent(self, deps: ReactDeps, input: AgentInput | None) -> tuple[ReactDeps, AgentInput | None]:
        """Runs the ``before_agent`` hooks; what this run uses is ``deps``, or a copy with the
        instruction, tools and return-directly names the hooks set."""
        own = self._run_tools(deps)
        ctx = ChatModelAgentContext(self.instruction, list(own), set(self.return_directly), input)
        for hook in deps.hooks.before_agent:
            try:
                new = await hook(ctx)
            except Exception as e:
                raise hook_failed(self.name, hook, e) from e
            if new is not None and not isinstance(new, ChatModelAgentContext):
                raise hook_failed(
                    self.name,
                    hook,
                    TypeError(f"it returned {type(new).__name__}; return None or a ChatModelAgentContext"),
                )
            ctx = new or ctx
        tools = [as_tool(t) for t in ctx.tools]
        if ctx.instruction == self.instruction and tools == own and ctx.return_directly == self.return_directly:
            return deps, ctx.input
        if not isinstance(ctx.instruction, str):
            raise TypeError(
                f"ChatModelAgent {self.name!r}: a before_agent hook set the instruction to "
                f"{type(ctx.instruction).__name__}; it must be a str"
            )
        return_directly = set(ctx.return_directly)
        index = self._index(tools, return_directly)
        return deps.with_tools(ctx.instruction, index, self._infos(tools), return_directly, _emitting(tools)), ctx.input
