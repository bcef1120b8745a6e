"""The steps of the ReAct loop (see :mod:`rillet.chatmodel.state`).

A run goes ``call_model [-> take_reply] -> one_call [-> join_one] -> call_model ...`` in the
common round (one tool call), or ``-> start_round -> (call_inline | collect)... -> end_round
-> call_model ...`` in the others, until a reply without tool calls or a return-directly tool
leads to ``finish``. An interrupted call ends the run through :func:`_interrupt`, the one
place a ChatModelAgent saves its round and interrupts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any, cast

from rillet._core.loop import Inbox, child_task, joined, result_of
from rillet._native import (
    AgenticMessage,
    Message,
    StreamReader,
    ToolCall,
    concat_messages,
    convert_stream,
    stream_from_list,
)
from rillet.chatmodel.callbacks import Callbacks
from rillet.chatmodel.config import (
    ExceedMaxIterationsError,
    ModelContext,
    awaitable,
)
from rillet.chatmodel.guardrails import GuardrailContext, GuardrailRejection, GuardrailRetry, run_guardrails
from rillet.chatmodel.middleware import ChatModelAgentState, hook_failed
from rillet.chatmodel.output import check_reply
from rillet.chatmodel.state import ReactLoop, Round, RoundState, Step, run_typed
from rillet.chatmodel.task import FINISH_TASK_TOOL_NAME, ends_task, finished_at
from rillet.chatmodel.tool_call import Outcome, attempt, call_tool
from rillet.checkpoint.payload import events_to_records, records_to_events
from rillet.data.events import AgentAction, AgentEvent, event_from_message
from rillet.data.schema import aconcat_message_stream
from rillet.errors import InputRejectedError, Interrupted, OutputRejectedError
from rillet.run import observer
from rillet.run.agent import StateDelta, carry_state_delta
from rillet.run.context import add_session_value
from rillet.run.interrupts import composite_interrupt_event

if TYPE_CHECKING:
    from rillet.chatmodel.deps import ReactDeps
    from rillet.checkpoint.journal import AgentSteps
    from rillet.tools import ToolInfo

__all__ = ["call_model", "final_position", "finish", "guard_input", "one_call", "start_round", "store_output"]


async def call_model(deps: ReactDeps, loop: ReactLoop) -> Step:
    """Calls the model with the conversation; its event goes out before the agent reads its
    own copy of a streamed reply."""
    if loop.remaining <= 0:
        raise ExceedMaxIterationsError(
            f"ChatModelAgent {deps.name!r} exceeds max iterations ({deps.max_iterations} model calls)"
        )
    callbacks = deps.callbacks
    if callbacks is not None and callbacks.model:
        return await _call_with_callbacks(deps, loop, callbacks)
    if loop.budget is not None:  # the run's max_llm_calls: a call past it is refused, not made
        loop.budget.llm_call(deps.name)
    loop.remaining -= 1
    loop.iteration += 1
    state, infos, model = loop.messages, deps.tool_infos, deps.model
    hooks = deps.hooks
    if hooks.around_model:
        infos, model = await _before_model(deps, loop, infos)
    if loop.observing is not None:
        observer.model_start(loop.observing, deps.name, model, state)
    recorded = loop.steps.reply(loop.iteration) if loop.steps is not None else None
    if loop.streaming:
        if recorded is not None:  # a step run's replay: the reply it recorded, as a stream
            stream: Any = stream_from_list([recorded.copy()])
        else:
            stream = model.stream(state, tools=infos or None, **loop.model_options)
            stream = await (stream if type(stream) is CoroutineType else awaitable(stream, model, "stream"))
            if not isinstance(stream, StreamReader):
                raise _not_a_stream(model, stream)
        user_copy, loop.reply = stream.copy(2)
        loop.out.append(event_from_message(None, user_copy))
        return take_reply
    reply: Any
    if recorded is not None:
        reply = recorded.copy()
    else:
        reply = model.generate(state, tools=infos or None, **loop.model_options)
        reply = await (reply if type(reply) is CoroutineType else awaitable(reply, model, "generate"))
        if type(reply) is not Message and type(reply) is not AgenticMessage:
            raise _not_a_message(model, reply)
        if loop.steps is not None:  # recorded before anything acts on it
            await loop.steps.record_reply(loop.iteration, reply)
    loop.out.append(event_from_message(reply.copy()))
    if hooks.after_model:  # they run once the event is out
        loop.reply = reply
        return take_reply
    return _took_reply(deps, loop, reply)


async def _model_stream(model: Any, loop: ReactLoop, infos: list[ToolInfo]) -> StreamReader[Message]:
    """The model's streamed reply to the conversation, checked to be a stream (the callbacks'
    path; :func:`call_model` does the same inline, a coroutine fewer on the hot path)."""
    stream = await awaitable(model.stream(loop.messages, tools=infos or None, **loop.model_options), model, "stream")
    if not isinstance(stream, StreamReader):
        raise _not_a_stream(model, stream)
    return stream


def _not_a_stream(model: Any, stream: Any) -> TypeError:
    return TypeError(
        f"{type(model).__name__}.stream returned {type(stream).__name__}; a ChatModel's stream "
        "must return a rillet StreamReader of Message chunks (e.g. rillet.stream_from_list([...]))"
    )


def _not_a_message(model: Any, reply: Any) -> TypeError:
    return TypeError(
        f"{type(model).__name__}.generate returned {type(reply).__name__}; a ChatModel's generate must return a rillet.Message "
        "(or a rillet.AgenticMessage)"
    )


async def _call_with_callbacks(deps: ReactDeps, loop: ReactLoop, callbacks: Callbacks) -> Step:
    """:func:`call_model` for an agent with model callbacks (or a run with plugins that have
    some). ``before_model`` may give the response (the model is not called); the model's
    error may be recovered by ``on_model_error``; ``after_model`` may replace the reply. The
    event shows the reply the agent acts on, so with ``after_model`` or ``on_model_error`` a
    streamed reply is read to its end first and goes out as a stream of its chunks (of the
    one replacing message, if replaced). A step run records that reply; its replay uses it
    and runs no model callback again."""
    loop.remaining -= 1
    loop.iteration += 1
    # this call's tools, a copy: a callback editing ctx.tools changes this call, not the agent's list
    mctx = ModelContext(
        deps.name, loop.iteration, loop.messages, list(deps.tool_infos if loop.tools is None else loop.tools)
    )
    steps = loop.steps
    recorded = steps.reply(loop.iteration) if steps is not None else None
    reply: Message | None = recorded.copy() if recorded is not None else None
    if reply is not None and steps is not None and steps.given(loop.iteration):
        _emit_reply(loop, reply, None)  # a before_model response replayed: as when it was given
        return _took_reply(deps, loop, reply, called=False)
    if reply is None and callbacks.before_model:
        response = await callbacks.run_before_model(mctx)
        if response is not None:  # the response replaces the call: no model, no after-model hooks
            reply = _as_message(response, loop)
            if steps is not None:
                await steps.record_reply(loop.iteration, reply, given=True)
            _emit_reply(loop, reply, None)
            return _took_reply(deps, loop, reply, called=False)
    model, infos = deps.model, mctx.tools
    if deps.hooks.around_model:
        infos, model = await _before_model(deps, loop, infos)
    if loop.budget is not None:  # (a replayed call counts, as in call_model)
        loop.budget.llm_call(deps.name)
    if loop.observing is not None:
        observer.model_start(loop.observing, deps.name, model, loop.messages)
    if reply is None:
        if loop.streaming and not callbacks.whole:  # the event goes out as the model streams
            user_copy, loop.reply = (await _model_stream(model, loop, infos)).copy(2)
            loop.out.append(event_from_message(None, user_copy))
            return take_reply
        chunks: list[Message] | None = None
        try:
            if loop.streaming:
                async with await _model_stream(model, loop, infos) as stream:
                    chunks = [c async for c in stream]
                reply = concat_messages(chunks)
            else:
                generated = await awaitable(
                    model.generate(loop.messages, tools=infos or None, **loop.model_options), model, "generate"
                )
                if type(generated) is not Message and type(generated) is not AgenticMessage:
                    raise _not_a_message(model, generated)
                reply = _as_message(generated)
        except Exception as e:
            recovered = await callbacks.run_on_model_error(mctx, e) if callbacks.on_model_error else None
            if recovered is None:
                raise
            reply, chunks = _as_message(recovered, loop), None
        if callbacks.after_model:
            kept = reply.copy() if chunks is not None else None
            replaced = await callbacks.run_after_model(mctx, reply)
            if replaced is not None:
                reply, chunks = _as_message(replaced, loop), None
            elif kept is not None and reply != kept:  # edited in place (ADK's way): the stream shows the edit
                chunks = None
        if steps is not None:  # recorded before anything acts on it
            await steps.record_reply(loop.iteration, reply)
        _emit_reply(loop, reply, chunks)
    else:  # a step run's replay
        _emit_reply(loop, reply, None)
    if deps.hooks.after_model:
        loop.reply = reply
        return take_reply
    return _took_reply(deps, loop, reply)


def _as_message(reply: Message | AgenticMessage, loop: ReactLoop | None = None) -> Message:
    """``reply`` as the loop's type: the loop is typed by Message and carries an
    AgenticMessage the same way (its steps branch on the type where the two differ). With
    ``loop`` (a callback's message), converted to the conversation's type: a block-list run
    keeps one type (a Message that cannot convert without loss raises MessageConversionError)."""
    return run_typed(loop, reply) if loop is not None else cast(Message, reply)


def _emit_reply(loop: ReactLoop, reply: Message, chunks: list[Message] | None) -> None:
    """The reply's event, in the run's shape: a stream (of the model's own ``chunks`` when
    the reply is theirs) when the run streams."""
    if loop.streaming:
        loop.out.append(event_from_message(None, stream_from_list(chunks if chunks is not None else [reply.copy()])))
    else:
        loop.out.append(event_from_message(reply.copy()))


async def take_reply(deps: ReactDeps, loop: ReactLoop) -> Step:
    """The reply (a streamed one read to its end), after the ``after_model`` callbacks."""
    reply = loop.reply
    loop.reply = None
    if isinstance(reply, StreamReader):
        reply = await aconcat_message_stream(reply)
        steps = loop.steps
        if steps is not None and steps.reply(loop.iteration) is None:
            await steps.record_reply(loop.iteration, reply)
    assert isinstance(reply, (Message, AgenticMessage))
    if deps.hooks.after_model:
        reply = await _after_model(deps, loop, reply)
    return _took_reply(deps, loop, reply)


async def _before_model(deps: ReactDeps, loop: ReactLoop, infos: list[ToolInfo]) -> tuple[list[ToolInfo], Any]:
    """The ``before_model`` hooks, each rewriting the state in turn (kept in the loop: later
    calls and checkpoints see it, as Eino's BeforeModelRewriteState), then the model wrapped
    by the ``wrap_model`` hooks (the first one outermost): the tools and model of this call."""
    if loop.tools is not None:
        infos = loop.tools
    hooks = deps.hooks
    if hooks.before_model and infos is deps.tool_infos:  # a hook may edit them in place: this run's copy
        infos = list(infos)
    loop.mctx = mctx = ModelContext(deps.name, loop.iteration, loop.messages, infos)
    if hooks.before_model:
        infos = await _rewrite(hooks.before_model, loop, ChatModelAgentState(loop.messages, infos), mctx)
        if loop.tools is None and _changed(infos, deps.tool_infos):  # edited in place: kept, as assigned
            loop.tools = infos
    model = deps.model
    for wrap in reversed(hooks.wrap_model):
        try:
            model = wrap(model, mctx)
        except Exception as e:
            raise hook_failed(deps.name, wrap, e) from e
        if not (callable(getattr(model, "generate", None)) and callable(getattr(model, "stream", None))):
            raise hook_failed(deps.name, wrap, TypeError(f"it returned {type(model).__name__}; return a ChatModel"))
    return infos, model


def _changed(tools: list[ToolInfo], before: list[ToolInfo]) -> bool:
    return len(tools) != len(before) or any(a is not b for a, b in zip(tools, before, strict=True))


async def _after_model(deps: ReactDeps, loop: ReactLoop, reply: Message) -> Message:
    """The ``after_model`` hooks rewrite the state with the reply last; the last message of the
    rewritten state is the reply the agent goes on with (it joins the state again after)."""
    loop.messages.append(reply)
    mctx = loop.mctx
    assert mctx is not None
    await _rewrite(deps.hooks.after_model, loop, ChatModelAgentState(loop.messages, mctx.tools), mctx)
    if not loop.messages or not isinstance(loop.messages[-1], (Message, AgenticMessage)):
        raise ValueError(
            f"ChatModelAgent {deps.name!r}: an after_model hook left the state without a last message; "
            "the last message is the model's reply the agent acts on"
        )
    return loop.messages.pop()


async def _rewrite(hooks: list[Any], loop: ReactLoop, state: ChatModelAgentState, mctx: ModelContext) -> list[ToolInfo]:
    """Runs state-rewriting hooks in order; what each leaves is the loop's state (the same
    message list object throughout, so the ModelContext sees it too). Returns the tools."""
    messages = loop.messages
    for hook in hooks:
        try:
            new = await hook(state, mctx)
        except Exception as e:
            raise hook_failed(mctx.agent_name, hook, e) from e
        if new is not None:
            if not isinstance(new, ChatModelAgentState):
                raise hook_failed(
                    mctx.agent_name,
                    hook,
                    TypeError(f"it returned {type(new).__name__}; return None or a ChatModelAgentState"),
                )
            state = new
        bad = (
            next((m for m in state.messages if type(m) is not Message and type(m) is not AgenticMessage), None)
            if state.messages
            else None
        )
        if bad is not None or not isinstance(state.messages, list):
            what = type(bad if bad is not None else state.messages).__name__
            raise hook_failed(
                mctx.agent_name,
                hook,
                TypeError(f"it left a {what} in the state's messages; they must be a list of rillet.Message"),
            )
        if state.messages is not messages:
            messages[:] = state.messages
            state.messages = messages
        if state.tools is not mctx.tools:
            loop.tools = mctx.tools = list(state.tools)
            state.tools = mctx.tools
    return mctx.tools


def _took_reply(deps: ReactDeps, loop: ReactLoop, reply: Message, called: bool = True) -> Step:
    """The reply joins the conversation: tool calls start a round, anything else is the
    final answer. ``called`` False: a ``before_model`` callback's response, no model call
    (the observers were not told of one)."""
    if loop.observing is not None and called:
        observer.model_end(loop.observing, deps.name, deps.model, reply)
    if loop.messages and type(reply) is not type(loop.messages[0]):
        raise _other_type(deps, loop, reply)
    loop.messages.append(reply)
    calls = reply.tool_calls
    if deps.output is not None:
        checked = check_reply(deps.name, deps.output, loop, reply, bool(deps.tool_infos))
        if checked is not None:
            return _answered(deps, loop, reply) if checked else call_model
    if not calls or not deps.tool_infos:
        loop.final_text = reply.content
        return _answered(deps, loop, reply)
    if type(reply) is not Message:  # an AgenticMessage: tool results join as tool_result blocks (general round)
        loop.agentic = True
        return start_round
    return one_call if len(calls) == 1 and not deps.emits else start_round


def _other_type(deps: ReactDeps, loop: ReactLoop, reply: Message) -> TypeError:
    """A reply in the other message type: a run keeps one (a conversation of both would be
    sent to the next call as it is, and its events typed neither way)."""
    theirs, ours = type(reply).__name__, type(loop.messages[0]).__name__
    convert = "AgenticMessage.from_message(m) of each" if theirs == "AgenticMessage" else "am.to_messages() of each"
    return TypeError(
        f"ChatModelAgent {deps.name!r}: the model ({type(deps.model).__name__}) replied with {_an(theirs)} to a "
        f"conversation of {ours}, and a run keeps one message type: give the run {theirs} input ({convert}), "
        f"or make the model answer {ours} with {ours}"
    )


def _an(name: str) -> str:
    return f"an {name}" if name[0] in "AEIOU" else f"a {name}"


# --- guardrails ----------------------------------------------------------------------------


async def guard_input(deps: ReactDeps, loop: ReactLoop) -> Step:
    """A new run's first step when the agent has input guardrails: the blocking ones run
    first; the concurrent ones run beside the first model call, whose events are held in
    ``loop.out`` until they pass (a rejection cancels the call and drops them)."""
    assert loop.input_messages is not None
    ctx = GuardrailContext(deps.name, loop.input_messages)
    loop.input_messages = None
    guards = deps.input_guardrails
    blocking = [g for g in guards if not g.concurrent]
    if blocking:
        _reject_input(deps, await run_guardrails(deps.name, "input", blocking, ctx))
    concurrent = [g for g in guards if g.concurrent]
    if not concurrent:
        return call_model
    held = len(loop.out)
    model_call = child_task(call_model(deps, loop))
    try:
        found = await run_guardrails(deps.name, "input", concurrent, ctx)
    except BaseException:
        await _drop_model_call(model_call, loop, held)
        raise
    if found is not None:
        await _drop_model_call(model_call, loop, held)
        _reject_input(deps, found)
    return await joined(model_call)


def _reject_input(deps: ReactDeps, found: tuple[str, GuardrailRejection] | None) -> None:
    if found is not None:
        name, rejection = found
        raise InputRejectedError(deps.name, name, rejection.reason, rejection.info)


async def _drop_model_call(model_call: asyncio.Task[Step], loop: ReactLoop, held: int) -> None:
    """Cancels a model call an input guardrail rejected, and drops what it produced: the
    events in ``loop.out`` after position ``held`` (their streams closed), and the agent's
    copy of the reply."""
    model_call.cancel()
    await asyncio.wait([model_call])
    if not model_call.cancelled():
        model_call.exception()  # a failed call: the rejection is the run's error
    for ev in loop.out[held:]:
        mv = ev.message_output
        if mv is not None and mv.message_stream is not None:
            mv.message_stream.close()
    del loop.out[held:]
    if isinstance(loop.reply, StreamReader):
        loop.reply.close()
    loop.reply = None


def _answered(deps: ReactDeps, loop: ReactLoop, reply: Message) -> Step:
    """The final answer: checked by the output guardrails, if any, then the run finishes."""
    if not deps.output_guardrails:
        return finish
    loop.reply = reply
    return guard_output


async def guard_output(deps: ReactDeps, loop: ReactLoop) -> Step | None:
    """Runs the output guardrails on the final answer (its event is already out). A
    rejection ends the run with an error; one asking for a retry, the first time, sends the
    reason to the model (an event says so) and calls it again, beyond ``max_iterations``."""
    answer = loop.reply
    loop.reply = None
    assert isinstance(answer, Message)
    ctx = GuardrailContext(deps.name, [m.copy() for m in loop.messages], answer.copy())
    found = await run_guardrails(deps.name, "output", deps.output_guardrails, ctx)
    if found is None:
        await finish(deps, loop)
        return None
    name, rejection = found
    if not rejection.retry or loop.guard_retries > 0:
        raise OutputRejectedError(deps.name, name, rejection.reason, rejection.info)
    loop.guard_retries += 1
    loop.messages.append(
        run_typed(
            loop,
            Message.user(f"Your answer was not accepted ({name}): {rejection.reason}. Answer again, correcting this."),
        )
    )
    loop.remaining += 1
    loop.final_text, loop.value = "", None
    loop.out.append(AgentEvent("", (), None, AgentAction(customized_action=GuardrailRetry(name, rejection.reason))))
    return call_model


def store_output(deps: ReactDeps, loop: ReactLoop) -> None:
    """Stores the answer under ``output_key`` (once a run) and reports it as a state delta:
    on the answer's event while it has not gone out (the agent calls this before the events
    of a step that leads to :func:`finish` go out), else on an event of its own."""
    if deps.output_key is None or loop.output_stored:
        return
    loop.output_stored = True
    value = loop.final_text if loop.value is None else loop.value
    add_session_value(deps.output_key, value)
    carry_state_delta(loop.out, StateDelta({deps.output_key: value}))


async def finish(deps: ReactDeps, loop: ReactLoop) -> None:
    """The run ended with an answer: store it under ``output_key``, run ``after_agent``."""
    store_output(deps, loop)
    hooks = deps.hooks.after_agent
    if hooks:
        state = ChatModelAgentState(loop.messages, loop.tools if loop.tools is not None else deps.tool_infos)
        for after in hooks:
            try:
                await after(state)
            except Exception as e:
                raise hook_failed(deps.name, after, e) from e


# --- the tool round ------------------------------------------------------------------------


async def start_round(deps: ReactDeps, loop: ReactLoop) -> Step | None:
    """Starts the calls of the last message (a round other than the common one, see
    :func:`one_call`): inline, one after another, when there is one call to make or the agent
    runs them sequentially, else all at once. A resumed round reruns only the calls that had
    not completed."""
    saved, loop.resumed = loop.resumed, None
    if saved is not None and type(loop.messages[-1]) is not Message:  # a resumed AgenticMessage run
        loop.agentic = True
    calls = loop.messages[-1].tool_calls
    direct = final_position(calls, deps.return_directly)
    if saved is None:
        rnd = Round(calls, direct, {})
    else:
        rnd = Round(calls, direct, dict(saved.completed), saved_final=saved.final)
    if loop.steps is not None:
        _replay_round(loop, loop.steps, rnd)
    rnd.pending = [(i, c) for i, c in enumerate(calls) if i not in rnd.results]
    loop.round = rnd
    if not deps.emits and (len(rnd.pending) == 1 or deps.execute_tools_sequentially):
        return call_inline if rnd.pending else end_round
    _start_tasks(deps, loop, rnd)
    return collect if rnd.left else end_round


def _replay_round(loop: ReactLoop, steps: AgentSteps, rnd: Round) -> None:
    """A step run's replay: the calls of this round it recorded are results already (their
    events go out again, a return-directly call's at the end of the round)."""
    steps.replay_values(loop.iteration)
    for pos, (msg, recs) in steps.tool_results(loop.iteration).items():
        if pos in rnd.results:
            continue
        rnd.results[pos] = msg
        if pos == rnd.direct:
            rnd.saved_final = recs
        else:
            loop.out.append(_replayed_event(msg, recs, rnd.calls[pos].function.name))
    rnd.known = frozenset(rnd.results)


def _replayed_event(msg: Message, recs: list[Any] | None, name: str) -> AgentEvent:
    """A recorded call of the tool ``name``: its event, as :func:`call_tool` made it."""
    if recs:
        return records_to_events(recs)[0]
    return event_from_message(msg.copy(), None, "tool", name)


async def _record_round(loop: ReactLoop, rnd: Round) -> None:
    """Records the results of the round's calls not recorded yet (a step run): those of
    streaming tools, whose results are read to their end when the round ends."""
    steps = loop.steps
    if steps is None:
        return
    final = rnd.final
    action = await events_to_records([final]) if final is not None and final.action is not None else None
    new = {p: (m, action if p == rnd.direct else None) for p, m in rnd.results.items() if p not in rnd.known}
    if new:
        await steps.record_tools(loop.iteration, new)


async def _record_call(loop: ReactLoop, rnd: Round, pos: int) -> None:
    """A step run records each call of a round as it returns, not when the round ends: if the
    run stops while another call of the round is under way, this one is replayed, not made again."""
    steps = loop.steps
    if steps is None or pos not in rnd.results or pos in rnd.known:
        return
    ev = rnd.final if pos == rnd.direct else None
    action = await events_to_records([ev]) if ev is not None and ev.action is not None else None
    await steps.record_tools(loop.iteration, {pos: (rnd.results[pos], action)})
    rnd.known = rnd.known | {pos}


def _call_key(loop: ReactLoop, pos: int, c: ToolCall) -> str | None:
    """In a step run, the key of the round's call at ``pos``: by its place in the run, not its
    id, which a model may send again in a later round (or twice in one)."""
    return loop.steps.call(loop.iteration, pos, c.function.name) if loop.steps is not None else None


def _start_tasks(deps: ReactDeps, loop: ReactLoop, rnd: Round) -> None:
    inbox: Inbox[tuple[str, Any]] = Inbox()
    emit = (lambda ev: inbox.put_nowait(("event", ev))) if deps.emits else None
    gate = asyncio.Lock() if deps.execute_tools_sequentially else None
    state, streaming, obs = loop.messages, loop.streaming, loop.observing

    async def one(c: ToolCall, step: str | None) -> Outcome:
        if gate is None:
            return await attempt(deps, c, state, streaming, emit, obs, step)
        async with gate:
            return await attempt(deps, c, state, streaming, emit, obs, step)

    rnd.inbox = inbox
    rnd.tasks = {child_task(one(c, _call_key(loop, pos, c))): pos for pos, c in rnd.pending}
    for t in rnd.tasks:
        t.add_done_callback(lambda t: inbox.put_nowait(("done", t)))
    rnd.left = len(rnd.tasks)


async def call_inline(deps: ReactDeps, loop: ReactLoop) -> Step:
    """Runs the next pending call in the agent's own task."""
    rnd = loop.round
    assert rnd is not None
    pos, c = rnd.pending[rnd.next]
    rnd.next += 1
    outcome = await attempt(deps, c, loop.messages, loop.streaming, None, loop.observing, _call_key(loop, pos, c))
    _settle(rnd, pos, outcome, loop)
    await _record_call(loop, rnd, pos)
    return call_inline if rnd.next < len(rnd.pending) else end_round


async def collect(deps: ReactDeps, loop: ReactLoop) -> Step:
    """Takes the next thing the concurrent calls produced: an event a tool emitted (agent
    tools with ``emit_internal_events``) or a finished call."""
    rnd = loop.round
    assert rnd is not None and rnd.inbox is not None
    kind, item = await rnd.inbox.get()
    if kind == "event":
        loop.out.append(item)
        return collect
    rnd.left -= 1
    pos = rnd.tasks[item]
    _settle(rnd, pos, result_of(item), loop)
    await _record_call(loop, rnd, pos)
    return collect if rnd.left else end_round


def _settle(rnd: Round, pos: int, outcome: Outcome, loop: ReactLoop) -> None:
    """A finished call: its interrupt kept for the end of the round, its result kept (a
    streaming tool's result is still coming: its future is parked), its event sent out or,
    for a held return-directly call, kept for the end of the round."""
    ev, msg = outcome
    if isinstance(ev, Interrupted):
        rnd.signals.append(ev)
        return
    if loop.agentic:
        msg = _agentic_result(ev, msg)
    if isinstance(msg, (Message, AgenticMessage)):
        rnd.results[pos] = msg
    elif msg is not None:
        rnd.futures[pos] = msg
    if pos == rnd.direct:
        rnd.final = ev
    else:
        loop.out.append(ev)


async def end_round(deps: ReactDeps, loop: ReactLoop) -> Step | None:
    """Ends the round once every call has finished: an interrupt of any call becomes one
    composite interrupt of this agent, saving what the resumed run needs to rerun only the
    calls that did not complete; otherwise the results join the conversation and the model
    is called again, unless a return-directly call ends the run (its event last)."""
    rnd = loop.round
    assert rnd is not None
    loop.round = None
    for pos, fut in rnd.futures.items():  # streaming tools' concatenated results
        try:
            result: Any = await joined(fut)
            rnd.results[pos] = AgenticMessage.from_message(result) if loop.agentic else result  # type: ignore[assignment]
        except Interrupted as e:  # the stream interrupted part-way
            rnd.signals.append(e)
    results, calls, final = rnd.results, rnd.calls, rnd.final
    if rnd.signals:
        kept = await events_to_records([final]) if final is not None and final.action is not None else None
        return _interrupt(loop, results, rnd.signals, kept)
    await _record_round(loop, rnd)
    loop.messages.extend(results[i] for i in range(len(calls)) if i in results)
    direct = rnd.direct
    if direct < 0:
        done = finished_at(deps.mode, calls, results)  # a task's finish_task: its event is already out
        if done < 0:
            return call_model
        loop.final_text = results[done].content
        return finish
    if final is None:  # it completed before an interrupt
        if rnd.saved_final:  # with an action, kept by the interrupted run
            final = records_to_events(rnd.saved_final)[0]
        elif direct in results:
            result = results[direct]
            name = result.tool_name if type(result) is Message else calls[direct].function.name
            final = event_from_message(result.copy(), role="tool", tool_name=name)
    loop.final_text = _result_text(results[direct]) if direct in results else ""
    if final is not None:
        loop.out.append(final)
    return finish


async def one_call(deps: ReactDeps, loop: ReactLoop) -> Step | None:
    """The common round: one call, nothing resumed, no events emitted by tools. It runs in
    the agent's own task, and its event goes out as soon as the call returns (a
    return-directly call's too: there is nothing to hold it for)."""
    c = loop.messages[-1].tool_calls[0]
    steps = loop.steps
    done = steps.tool_results(loop.iteration).get(0) if steps is not None else None
    if done is not None and steps is not None:  # a step run's replay
        steps.replay_values(loop.iteration)
        return _one_result(deps, loop, c, done[0], _replayed_event(*done, c.function.name))
    try:
        ev, msg = await call_tool(
            deps,
            c.function.name,
            c.id,
            c.function.arguments,
            loop.messages,
            loop.streaming,
            None,
            loop.observing,
            _call_key(loop, 0, c),
        )
    except Interrupted as e:
        return _interrupt(loop, {}, [e], None)
    if not isinstance(msg, Message):
        loop.out.append(ev)
        loop.joining = (c, msg)
        return join_one
    if steps is not None:
        action = await events_to_records([ev]) if ev.action is not None else None
        await steps.record_tools(loop.iteration, {0: (msg, action)})
    loop.out.append(ev)
    loop.messages.append(msg)  # (what _one_result does, inline: this runs for every call)
    if c.function.name in deps.return_directly or (
        c.function.name == FINISH_TASK_TOOL_NAME and ends_task(deps.mode, msg)
    ):
        loop.final_text = msg.content
        return finish
    return call_model


async def join_one(deps: ReactDeps, loop: ReactLoop) -> Step | None:
    """The common round's streaming tool, once its event is out: its concatenated result."""
    assert loop.joining is not None
    c, fut = loop.joining
    loop.joining = None
    try:
        msg = await joined(fut)
    except Interrupted as e:  # the stream interrupted part-way
        return _interrupt(loop, {}, [e], None)
    if loop.steps is not None:
        await loop.steps.record_tools(loop.iteration, {0: (msg, None)})
    return _one_result(deps, loop, c, msg)


def _one_result(deps: ReactDeps, loop: ReactLoop, c: ToolCall, msg: Message, ev: AgentEvent | None = None) -> Step:
    if ev is not None:
        loop.out.append(ev)
    loop.messages.append(msg)
    if c.function.name in deps.return_directly or (
        c.function.name == FINISH_TASK_TOOL_NAME and ends_task(deps.mode, msg)
    ):
        loop.final_text = msg.content
        return finish
    return call_model


def _interrupt(
    loop: ReactLoop, completed: dict[int, Message], signals: list[Interrupted], final: list[Any] | None
) -> Step | None:
    """The one way a ChatModelAgent interrupts: the round's interrupts become one composite
    interrupt of the agent, saving the round (see :class:`RoundState`); the run ends."""
    saved = RoundState(
        tuple(loop.messages), dict(completed), loop.remaining, loop.iteration, final, dict(loop.locals or {}) or None
    )
    loop.out.append(composite_interrupt_event(None, saved, *signals))
    return None


# --- AgenticMessage runs: tool results as tool_result blocks ------------------------------


def _agentic_result(ev: AgentEvent, msg: Any) -> Any:
    """A tool call's event and result in a block-list run: the tool message (whole, or each
    chunk of its stream) becomes a user AgenticMessage of one tool_result block. Returns the
    result (a future of a streaming tool's result is converted when joined)."""
    mv: Any = ev.message_output
    if mv is not None:
        if type(mv.message) is Message:
            mv.message = AgenticMessage.from_message(mv.message)
        if mv.message_stream is not None:
            mv.message_stream = convert_stream(mv.message_stream, _agentic_chunk)
    return AgenticMessage.from_message(msg) if type(msg) is Message else msg


def _agentic_chunk(chunk: Message) -> AgenticMessage:
    """One chunk of a streaming tool's result: its tool_result block at stream index 0."""
    am = AgenticMessage.from_message(chunk)
    am.blocks = [b.with_index(0) for b in am.blocks]
    return am


def _result_text(result: Message | AgenticMessage) -> str:
    """A tool result's text: a tool message's content, or a tool_result block's."""
    if type(result) is AgenticMessage:
        return "".join(b.text for b in result.blocks if b.kind == "tool_result")
    return result.content


def final_position(calls: Sequence[ToolCall], return_directly: set[str]) -> int:
    """The position of the round's return-directly call (-1 if none); the last one wins."""
    found = -1
    for i, c in enumerate(calls):
        if c.function.name in return_directly:
            found = i
    return found
