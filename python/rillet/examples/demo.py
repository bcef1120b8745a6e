"""``rillet demo``: a ReAct agent with four tools (one needs approval), offline, on a scripted model.

The model is a :class:`~rillet.models.ScriptedModel`: it plays a fixed conversation, so no API
key or network is needed, but everything else is the real thing: the Runner, the ReAct loop,
tools validated and run concurrently, and the model's tokens streamed as they arrive.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from rillet._native import FunctionCall, Message, ResponseMeta, ToolCall, Usage
from rillet.cli.common import default_db
from rillet.run.observer import ModelInfo, RunInfo, RunObserver

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from rillet.data.events import AgentEvent

__all__ = ["build_agent", "main", "make_console", "print_summary", "print_user", "render"]

QUESTION = "I land in Lisbon tomorrow with 200 USD. What's the weather, and what is that in euros?"

_WEATHER = {"lisbon": {"city": "Lisbon", "forecast": "sunny", "high_c": 24, "low_c": 16}}
_RATES = {("USD", "EUR"): 0.92, ("EUR", "USD"): 1.09}


def get_weather(city: str) -> dict[str, Any]:
    """Tomorrow's forecast for a city.

    Args:
        city: the city's name, e.g. "Lisbon".
    """
    found = _WEATHER.get(city.strip().lower())
    if found is None:
        raise ValueError(f"no forecast for {city!r}; known cities: Lisbon")
    return found


async def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Converts an amount of money between currencies at today's rate.

    Args:
        amount: how much money.
        from_currency: ISO code of the currency it is in, e.g. "USD".
        to_currency: ISO code of the currency wanted, e.g. "EUR".
    """
    rate = _RATES.get((from_currency.upper(), to_currency.upper()))
    if rate is None:
        raise ValueError(f"no rate for {from_currency}->{to_currency}")
    return f"{amount:g} {from_currency.upper()} = {amount * rate:.2f} {to_currency.upper()} (rate {rate})"


def packing_tips(forecast: str):  # type: ignore[no-untyped-def]
    """Packing tips for a forecast, streamed one by one.

    Args:
        forecast: a one-word forecast such as "sunny" or "rain".
    """
    tips = {"sunny": ["sunglasses", "sunscreen", "a light jacket for the evening"]}
    items = tips.get(forecast, ["an umbrella"])
    yield from (f"- {t}" + ("\n" if i < len(items) - 1 else "") for i, t in enumerate(items))


def _call(i: int, name: str, args: str) -> ToolCall:
    return ToolCall(index=i, id=f"call_{i}", function=FunctionCall(name, args))


def book_hotel(city: str, nights: int) -> str:
    """Books a hotel room. Needs the traveller's approval.

    Args:
        city: where to stay.
        nights: how many nights.
    """
    return f"Booked {nights} nights at Casa do Rio, {city} (confirmation LIS-4821)."


def _meta(finish: str, prompt: int, completion: int) -> ResponseMeta:
    return ResponseMeta(
        finish, Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
    )


def reply_for(messages: list[Message], tools: Any = None) -> Message:
    """What the scripted model says next, decided from the conversation so far, so that a run
    resumed in another process picks up where it stopped: two parallel tool calls, a streaming
    tool, a booking that needs approval, then the answer."""
    done = {m.tool_name: m.content for m in messages if m.role == "tool"}
    if not done:
        return Message(
            role="assistant",
            content="Let me check the forecast and convert your dollars at the same time.",
            tool_calls=[
                _call(0, "get_weather", '{"city": "Lisbon"}'),
                _call(1, "convert_currency", '{"amount": 200, "from_currency": "USD", "to_currency": "EUR"}'),
            ],
            response_meta=_meta("tool_calls", 182, 41),
        )
    if "packing_tips" not in done:
        return Message(
            role="assistant",
            content="Sunny weather: here is what to pack.",
            tool_calls=[_call(0, "packing_tips", '{"forecast": "sunny"}')],
            response_meta=_meta("tool_calls", 260, 22),
        )
    if "book_hotel" not in done:
        return Message(
            role="assistant",
            content="I can also book your usual hotel for two nights.",
            tool_calls=[_call(0, "book_hotel", '{"city": "Lisbon", "nights": 2}')],
            response_meta=_meta("tool_calls", 301, 25),
        )
    booked = done["book_hotel"].startswith("Booked")
    stay = "Your room is booked (LIS-4821)." if booked else "I did not book the hotel, as you asked."
    return Message(
        role="assistant",
        content=(
            "Lisbon tomorrow: sunny, 16-24 °C. Your 200 USD is about 184.00 EUR at today's "
            f"rate of 0.92. Pack sunglasses, sunscreen and a light jacket. {stay} Boa viagem!"
        ),
        response_meta=_meta("stop", 352, 51),
    )


def build_agent(delay: float = 0.02, model: Any = None) -> Any:
    """The demo's agent: a ChatModelAgent over a ScriptedModel (or ``model``) and four tools,
    one of which needs approval."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.models import ScriptedModel
    from rillet.tools import tool
    from rillet.tools.approval import requires_approval

    return ChatModelAgent(
        name="travel_assistant",
        description="Answers travel questions with live tools.",
        instruction="You are a concise travel assistant. Use the tools; never guess numbers.",
        model=model if model is not None else ScriptedModel(reply_for, chunk_size=3, delay=delay),
        tools=[tool(get_weather), tool(convert_currency), tool(packing_tips), requires_approval(tool(book_hotel))],
    )


class Renderer:
    """Prints events as they arrive: streamed text inline, tool results in boxes' stead.

    With ``run_paths=True`` (multi-agent runs) a line names the run path whenever it
    changes, so transfers, workflow children and agents called as tools are easy to follow;
    with ``tree=True`` too, the path is drawn as a tree instead: the agents it adds to the
    last one shown, each indented by its depth.
    """

    def __init__(
        self,
        console: Console,
        *,
        run_paths: bool = False,
        tree: bool = False,
        verbose: bool | None = None,
        tool_errors: ToolErrors | None = None,
    ) -> None:
        self.console = console
        self.run_paths = run_paths
        self.tree = tree
        # An error's traceback: printed (True), offered with --verbose (False), neither (None:
        # a command without the switch, or events decoded from a checkpoint).
        self.verbose = verbose
        self.tool_errors = tool_errors  # the exceptions behind failed tool calls, by call id
        self.path = ""
        self.names: list[str] = []
        self.drawn = False  # whether a tree line was printed yet
        self.speaker = ""  # the agent whose header (model call) was printed last
        self.events = 0
        self.model_calls = 0
        self.tokens = 0
        self.errors = 0
        self.actions: list[str] = []
        self.seen: list[AgentEvent] = []

    def _where(self, ev: AgentEvent) -> bool:
        """Prints the event's run path if it differs from the last one; True if printed."""
        if not self.run_paths:
            return False
        path = " / ".join(s.agent_name for s in ev.run_path) or ev.agent_name
        if path == self.path:
            return False
        self.path = path
        if self.tree:
            self._tree([s.agent_name for s in ev.run_path] or [ev.agent_name])
        else:
            self.console.print(f"\n[dim]run path:[/] [bold]{escape(_short(path, self.console.width - 10))}[/]")
        return True

    def _tree(self, names: list[str]) -> None:
        """Prints the steps of ``names`` past those it shares with the last path shown (the
        last step again when it went back to an ancestor), indented by depth."""
        if not self.names and len(names) == 1:  # the root agent alone: its lines name it
            self.names = names
            return
        same = 0
        while self.drawn and same < min(len(names), len(self.names)) and names[same] == self.names[same]:
            same += 1
        self.names, self.drawn = names, True
        self.console.print()
        for depth in range(min(same, len(names) - 1), len(names)):
            pad = "  " * min(depth, 12)  # a loop's path grows every round: keep it on screen
            mark = "└ " if depth else ""
            self.console.print(f"[dim]{pad}{mark}[/][bold]{escape(_short(names[depth], self.console.width - 30))}[/]")

    def event(self, ev: AgentEvent) -> None:
        self.events += 1
        self.seen.append(ev)
        c = self.console
        moved = self._where(ev)
        if ev.error is not None:
            self.errors += 1
            c.print(
                f"[bold red]error[/] from {escape(ev.agent_name or 'agent')}: {escape(error_text(ev.error))}",
                highlight=False,
            )
            self.explain(ev.error)
            return
        mv = ev.message_output
        if mv is not None and mv.role == "assistant":
            self.model_calls += 1
            gap = "" if moved else "\n"
            c.print(f"{gap}[bold cyan]{escape(ev.agent_name)}[/] [dim](model call {self.model_calls})[/]")
            self.speaker = ev.agent_name
            msg = self._stream_text(mv)
            for call in msg.tool_calls:
                args = _short(call.function.arguments, c.width - 14 - len(call.function.name))
                c.print(f"  [yellow]→ calls[/] [bold]{escape(call.function.name)}[/]({escape(args)})", highlight=False)
            meta = msg.response_meta
            if meta is not None and meta.usage is not None:
                self.tokens += meta.usage.total_tokens
        elif mv is not None and mv.role == "tool":
            if self.speaker != ev.agent_name:  # a resumed run starts at its tool results: say whose
                gap = "" if moved else "\n"
                c.print(f"{gap}[bold cyan]{escape(ev.agent_name)}[/] [dim](tool results)[/]")
                self.speaker = ev.agent_name
            c.print(f"  [green]← {escape(mv.tool_name)}[/]" + (" [dim](streaming)[/]" if mv.is_streaming else ""))
            msg = self._stream_text(mv, indent="    ", style="green")
            self.tool_error(msg.tool_call_id)
        if ev.action is not None:
            what = _action_text(ev.action)
            self.actions.append(what)
            c.print(f"  [magenta]action:[/] {escape(what)}", highlight=False)

    def tool_error(self, call_id: str | None) -> None:
        """The exception behind the failed tool call ``call_id`` (its result is the error text the
        model was sent): its type and message, and its traceback as :meth:`explain` says."""
        if self.tool_errors is None or call_id is None:
            return
        failed = self.tool_errors.errors.pop(call_id, None)
        if failed is not None:
            tool, error = failed
            self.console.print(f"    [red]{escape(tool)} raised[/] {escape(error_text(error))}", highlight=False)
            self.explain(error)

    def flush_tool_errors(self) -> None:
        """The failed tool calls not shown under their results yet (a stream that ended first)."""
        if self.tool_errors is not None:
            for call_id in list(self.tool_errors.errors):
                self.tool_error(call_id)

    def explain(self, error: BaseException) -> None:
        """With ``verbose``, the error's traceback on stderr; else how to see it."""
        if self.verbose:
            import traceback

            print("".join(traceback.format_exception(error)).rstrip("\n"), file=sys.stderr, flush=True)
        elif self.verbose is False and error.__traceback__ is not None:
            self.console.print("    [dim](--verbose shows its traceback)[/]")

    def _stream_text(self, mv: Any, indent: str = "  ", style: str = "") -> Message:
        """Prints the message's text as it streams, wrapped to the console, and returns the
        whole message."""
        from rillet._native import MessageAccumulator

        out = Wrapped(self.console, indent, style)
        if not mv.is_streaming:
            msg: Message = mv.get_message()
            out.write(msg.content)
            out.end()
            return msg
        acc = MessageAccumulator()
        for chunk in mv.message_stream:
            acc.push(chunk)
            out.write(chunk.content)
        out.end()
        return acc.finish()


class Wrapped:
    """Writes streamed text word by word, wrapping at the console's width under an indent."""

    def __init__(self, console: Console, indent: str, style: str) -> None:
        self.console, self.indent, self.style = console, indent, style or None
        self.width = console.width
        self.col = 0
        self.pending = ""

    def write(self, text: str) -> None:
        for ch in text:
            if ch == "\n":
                self._flush_word()
                self._newline()
            elif ch == " ":
                self._flush_word()
                self.pending = " "
            else:
                self.pending += ch

    def _flush_word(self) -> None:
        word, self.pending = self.pending, ""
        if not word:
            return
        if self.col == 0:
            word = word.lstrip(" ")
            self.console.print(self.indent, end="", markup=False)
            self.col = len(self.indent)
        elif self.col + len(word) > self.width:
            self._newline()
            return self._print_first(word.lstrip(" "))
        self.console.print(word, end="", style=self.style, highlight=False, markup=False)
        self.col += len(word)

    def _print_first(self, word: str) -> None:
        self.console.print(self.indent + word, end="", style=self.style, highlight=False, markup=False)
        self.col = len(self.indent) + len(word)

    def _newline(self) -> None:
        if self.col:
            self.console.print()
        self.col = 0

    def end(self) -> None:
        self._flush_word()
        self._newline()


def error_text(error: BaseException) -> str:
    """An error as one line: its type and message (the type alone when it has no message)."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class ToolErrors(RunObserver):
    """Keeps the exception of each failed tool call (whose result is the error text the model is
    sent), for the renderer to show its type, and its traceback with ``--verbose``."""

    def __init__(self) -> None:
        self.errors: dict[str, tuple[str, BaseException]] = {}

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        if error is not None and result is not None:  # error alone: an interrupt, a cancellation, a raise
            self.errors[call_id] = (tool, error)


def _action_text(a: Any) -> str:
    """One line saying what an event's action does."""
    if a.exit:
        return "exit"
    if a.transfer_to_agent:
        return f"transfer to {a.transfer_to_agent.dest_agent_name}"
    if a.interrupted:
        return _describe_interrupt(a.interrupted)
    if a.break_loop:
        b = a.break_loop
        where = f", ends the loop in round {b.current_iterations + 1}" if b.done else ""
        return f"break loop (from {b.from_agent}{where})"
    if a.customized_action is None and a.state_delta is not None:
        return _short("session: " + ", ".join(f"{k} = {v!r}" for k, v in a.state_delta.items()), 60)
    return _short(repr(a.customized_action), 60)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_interrupt(info: Any) -> str:
    ctx = info.interrupt_contexts[0] if info.interrupt_contexts else None
    what = ctx.info if ctx is not None else None
    if isinstance(what, dict) and "tool" in what:
        args = ", ".join(f"{k}={v!r}" for k, v in what["arguments"].items())
        return f"paused: {what['tool']}({args}) needs approval"
    return f"paused: {what!r}"


def render(events: Any, console: Console, into: Renderer | None = None, *, run_paths: bool = False) -> Renderer:
    """Prints ``events`` as they arrive; ``into`` continues an earlier renderer's counts;
    ``run_paths`` prints the run path whenever it changes (for multi-agent runs)."""
    r = into if into is not None else Renderer(console, run_paths=run_paths)
    for ev in events:
        r.event(ev)
    return r


def make_console(color: bool | None = None) -> Console:
    """An 80-column console; ``color=False`` gives plain text, None lets rich decide."""

    from rich.console import Console

    # emoji off: an address such as tool:book:c1 is not the :book: emoji
    return Console(width=80, highlight=False, emoji=False, no_color=color is False, force_terminal=color)


def print_user(console: Console, text: str) -> None:
    """The user's question, wrapped under a ``user`` heading."""
    console.print("[bold]user[/]")
    out = Wrapped(console, "  ", "")
    out.write(text)
    out.end()


class _ModelCalls(RunObserver):
    """Counts a run's model calls and tokens as the agents make them (the run observer API:
    every model call of the tree, whether or not its reply reaches the event stream)."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.tokens = 0

    def on_model_start(self, run: RunInfo, model: ModelInfo, messages: Sequence[Message]) -> None:
        self.model_calls += 1

    def on_model_end(
        self, run: RunInfo, model: ModelInfo, reply: Message, usage: Usage | None, finish_reason: str
    ) -> None:
        self.tokens += usage.total_tokens if usage is not None else 0


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def print_summary(console: Console, r: Renderer, took: float, delay: float, counts: _ModelCalls | None = None) -> None:
    """The closing line: events, model calls, tokens (when the model reported any), time;
    the calls and tokens an observer counted (``counts``), else those seen in the events."""
    calls, tokens_used = (counts.model_calls, counts.tokens) if counts is not None else (r.model_calls, r.tokens)
    tokens = f" · {tokens_used} tokens" if tokens_used else ""
    console.print(f"\n[dim]{_count(r.events, 'event')} · {_count(calls, 'model call')}{tokens} · {took:.2f} s[/]")
    if delay:
        console.print("[dim]The scripted model pauses between tokens to look live; --fast skips that.[/]")


def _decide(console: Console, pending: Any, decisions: Any) -> Any:
    """The person's answer to the approval: from ``--approve``/``--reject`` (``decisions``), else
    the prompt ``rillet run`` and ``rillet resume`` show (typed, or piped on stdin); with neither
    (stdin at its end), approval, said so: the demo's own run needs no one at the keyboard.
    CTRL_C if the prompt was left with Ctrl-C."""
    from rillet.cli.prompt import NO_ANSWER, announce, ask
    from rillet.tools.approval import approve

    announce(console, pending)
    data = decisions.decide(pending)
    if data is not NO_ANSWER:
        return data
    data = ask(console, pending)
    if data is NO_ANSWER:
        console.print("  [dim]No answer on stdin: approving (pass --reject to decline).[/]")
        return approve()
    return data


def _render_unless_ctrl_c(events: Any, console: Console, into: Renderer) -> bool:
    """Renders ``events`` into ``into``; False if Ctrl-C stopped it (the run then closed, and
    a resume's claim on its checkpoint released: it can be resumed again at once)."""
    from rillet.run.run_handle import close_and_wait  # the run layer, loaded with the demo's run

    try:
        render(events, console, into=into)
    except KeyboardInterrupt:
        close_and_wait([events], 5.0)
        console.print()
        return False
    return True


def _interrupt_of(events: list[AgentEvent]) -> Any:
    for ev in events:
        if ev.action is not None and ev.action.interrupted is not None:
            return ev.action.interrupted.interrupt_contexts[0]
    return None


def main(
    *,
    delay: float = 0.02,
    streaming: bool = True,
    color: bool | None = None,
    decision: str | None = None,
    db: str | Path | None = None,
    approve: Sequence[str] = (),
    reject: Sequence[str] = (),
    stop_at_approval: bool = False,
    model: str = "scripted",
    verbose: bool = False,
) -> int:
    """Runs the demo and prints it; returns the process exit code. The run is checkpointed
    in SQLite (``db``) when it stops for approval, then resumed from there. ``model="openai"``
    runs it on an OpenAI-compatible endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, and
    ``OPENAI_MODEL``, default gpt-4o-mini) instead of the scripted model. ``verbose`` prints
    the traceback of a model or tool error. The approval is answered by ``approve``/``reject``
    (the flags of ``rillet run``), or ``decision`` (``"approve"`` or ``"reject"``), else at the
    prompt."""
    from rillet.checkpoint import SqliteCheckpointStore
    from rillet.cli.prompt import CTRL_C_STATUS
    from rillet.cli.prompt import resume_command as shell_command
    from rillet.runner import Runner

    console = make_console(color)
    chat = make_chat_model(model)
    if missing_key(console, chat):
        return 2
    where = "a scripted model (offline)" if chat is None else "an OpenAI-compatible model"
    console.print(f"[bold]rillet demo[/]: a ReAct agent with four tools on {where}")
    if chat is not None:
        console.print(f"[dim]{chat.model} at {chat.base_url}[/]")
    print_user(console, QUESTION)
    db_path = Path(db) if db is not None else default_db()
    delay = delay if chat is None else 0.0
    counts = _ModelCalls()
    tool_errors = ToolErrors()
    store = SqliteCheckpointStore(db_path)
    agent = build_agent(delay, chat)
    runner = Runner(agent, streaming=streaming, checkpoint_store=store, observers=[counts, tool_errors])
    checkpoint_id = f"demo-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    r = Renderer(console, verbose=verbose, tool_errors=tool_errors)
    resume_command = shell_command(checkpoint_id, str(db_path), "--approve")
    if not _render_unless_ctrl_c(runner.query(QUESTION, checkpoint_id=checkpoint_id), console, r):
        console.print("[bold]Stopped[/] (Ctrl-C) before the run asked for approval: nothing was saved.")
        return CTRL_C_STATUS
    r.flush_tool_errors()
    ask = _interrupt_of(r.seen)
    if ask is not None and stop_at_approval:
        console.print("\n[bold]Saved.[/] Continue from any process with:")
        console.print(f"  {escape(resume_command)}", soft_wrap=True)  # one line, to copy whole
        return 0
    if ask is not None:
        from rillet.cli.prompt import CTRL_C, Decisions, pending_of_event, warn_unused

        if decision is not None:  # the older spelling: one answer for the demo's one approval
            approve, reject = (("*",), ()) if decision == "approve" else ((), ("*=the traveller declined",))
        decisions = Decisions("demo", approve, reject)
        (pending,) = pending_of_event([ask])
        data = _decide(console, pending, decisions)
        if data is CTRL_C:
            console.print("\n[bold]Stopped[/] at the approval (Ctrl-C); the run is saved. Continue it with:")
            console.print(f"  {escape(resume_command)}", soft_wrap=True)
            return CTRL_C_STATUS
        console.print(f"\n[dim]resuming checkpoint {checkpoint_id} from {escape(str(db_path))}[/]")
        if not _render_unless_ctrl_c(runner.resume(checkpoint_id, targets={ask.id: data}), console, r):
            console.print(
                "[bold]Stopped[/] (Ctrl-C) while resuming; the run is saved at its approval. Continue it with:"
            )
            console.print(f"  {escape(resume_command)}", soft_wrap=True)
            return CTRL_C_STATUS
        r.flush_tool_errors()
        warn_unused("demo", decisions, [], [pending], set())
    print_summary(console, r, time.perf_counter() - start, delay, counts)
    return 0


def make_chat_model(model: str) -> Any:
    """None for the scripted model; an OpenAIChatModel configured from the environment."""
    if model == "scripted":
        return None
    if model != "openai":
        raise ValueError(f"model must be 'scripted' or 'openai', got {model!r}")
    import os

    from rillet.models.openai import OpenAIChatModel

    return OpenAIChatModel(os.environ.get("OPENAI_MODEL") or "gpt-4o-mini")


def missing_key(console: Console, chat: Any) -> bool:
    """Whether ``chat`` would go to OpenAI's own endpoint without a key (said so, before any
    request); a local server (``OPENAI_BASE_URL``, e.g. Ollama) needs none."""
    from rillet.models.openai import DEFAULT_BASE_URL

    if chat is None or chat.api_key or chat.base_url != DEFAULT_BASE_URL:
        return False
    console.print(
        f"[red]--model openai: no OPENAI_API_KEY is set[/] for {escape(DEFAULT_BASE_URL)}; set it, or point "
        "OPENAI_BASE_URL at a local server that needs none (e.g. Ollama: http://127.0.0.1:11434/v1)",
        soft_wrap=True,  # one line, whatever the terminal's width
    )
    return True


def demo_agent_for(checkpoint_id: str, saved: Any, chat: Any) -> Any:
    """The demo's agent, if the checkpoint is one of the demo's; else a CheckpointError saying
    to name the agent. A checkpoint from before agents were recorded counts as the demo's if
    its id is one the demo makes."""
    from rillet.checkpoint import CheckpointError
    from rillet.checkpoint.binding import agent_binding

    agent = build_agent(0.0, chat)
    ours = saved.get("fingerprint") == agent_binding(agent)["fingerprint"] if isinstance(saved, dict) else None
    if ours or (ours is None and checkpoint_id.startswith("demo-")):
        return agent
    name = saved.get("name") if isinstance(saved, dict) else None
    raise CheckpointError(
        f"checkpoint[{checkpoint_id}] was saved by agent {name!r}, not by the demo: "
        "pass the agent to resume it with: rillet resume ID --db FILE MODULE:ATTRIBUTE, or --agent MODULE:ATTRIBUTE "
        "(an agent, or a function of no arguments that builds one)"
    )
