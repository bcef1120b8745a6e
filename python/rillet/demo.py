"""``rillet demo``: a ReAct agent with three tools, offline, on a scripted model.

The model is a :class:`~rillet.models.ScriptedModel`: it plays a fixed conversation, so no API
key or network is needed, but everything else is the real thing: the Runner, the ReAct loop,
tools validated and run concurrently, and the model's tokens streamed as they arrive.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rillet._native import FunctionCall, Message, ToolCall, Usage
from rillet._native import ResponseMeta

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.events import AgentEvent

__all__ = ["build_agent", "main", "render"]

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


def script() -> list[Message]:
    """The conversation the scripted model plays: two parallel tool calls, one streaming tool,
    then the answer."""
    usage = ResponseMeta("tool_calls", Usage(prompt_tokens=182, completion_tokens=41, total_tokens=223))
    first = Message(
        role="assistant",
        content="Let me check the forecast and convert your dollars at the same time.",
        tool_calls=[
            _call(0, "get_weather", '{"city": "Lisbon"}'),
            _call(1, "convert_currency", '{"amount": 200, "from_currency": "USD", "to_currency": "EUR"}'),
        ],
        response_meta=usage,
    )
    second = Message(
        role="assistant",
        content="Sunny weather: here is what to pack.",
        tool_calls=[_call(0, "packing_tips", '{"forecast": "sunny"}')],
        response_meta=ResponseMeta("tool_calls", Usage(prompt_tokens=260, completion_tokens=22, total_tokens=282)),
    )
    answer = Message(
        role="assistant",
        content=(
            "Lisbon tomorrow: sunny, 16-24 °C. Your 200 USD is about 184.00 EUR at today's "
            "rate of 0.92. Pack sunglasses, sunscreen and a light jacket for the evening. "
            "Boa viagem!"
        ),
        response_meta=ResponseMeta("stop", Usage(prompt_tokens=331, completion_tokens=48, total_tokens=379)),
    )
    return [first, second, answer]


def build_agent(delay: float = 0.02) -> Any:
    """The demo's agent: a ChatModelAgent over a ScriptedModel and three tools."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.models import ScriptedModel
    from rillet.tools import tool

    return ChatModelAgent(
        name="travel_assistant",
        description="Answers travel questions with live tools.",
        instruction="You are a concise travel assistant. Use the tools; never guess numbers.",
        model=ScriptedModel(script(), chunk_size=3, delay=delay),
        tools=[tool(get_weather), tool(convert_currency), tool(packing_tips)],
    )


class _Renderer:
    """Prints events as they arrive: streamed text inline, tool results in boxes' stead."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.events = 0
        self.model_calls = 0
        self.tokens = 0

    def event(self, ev: AgentEvent) -> None:
        self.events += 1
        c = self.console
        if ev.error is not None:
            c.print(f"[bold red]error[/] from {ev.agent_name or 'agent'}: {ev.error}")
            return
        mv = ev.message_output
        if mv is not None and mv.role == "assistant":
            self.model_calls += 1
            c.print(f"\n[bold cyan]{ev.agent_name}[/] [dim](model call {self.model_calls})[/]")
            msg = self._stream_text(mv)
            for call in msg.tool_calls:
                args = _short(call.function.arguments, c.width - 14 - len(call.function.name))
                c.print(f"  [yellow]→ calls[/] [bold]{call.function.name}[/]({args})", highlight=False)
            meta = msg.response_meta
            if meta is not None and meta.usage is not None:
                self.tokens += meta.usage.total_tokens
        elif mv is not None and mv.role == "tool":
            c.print(f"  [green]← {mv.tool_name}[/]" + (" [dim](streaming)[/]" if mv.is_streaming else ""))
            msg = self._stream_text(mv, indent="    ", style="green")
        if ev.action is not None:
            a = ev.action
            what = (
                "exit"
                if a.exit
                else f"transfer to {a.transfer_to_agent.dest_agent_name}"
                if a.transfer_to_agent
                else "interrupt"
                if a.interrupted
                else "break loop"
                if a.break_loop
                else repr(a.customized_action)
            )
            c.print(f"  [magenta]action:[/] {what}")

    def _stream_text(self, mv: Any, indent: str = "  ", style: str = "") -> Message:
        """Prints the message's text as it streams, wrapped to the console, and returns the
        whole message."""
        from rillet._native import MessageAccumulator

        out = _Wrapped(self.console, indent, style)
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


class _Wrapped:
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
            self.console.print(self.indent, end="")
            self.col = len(self.indent)
        elif self.col + len(word) > self.width:
            self._newline()
            return self._print_first(word.lstrip(" "))
        self.console.print(word, end="", style=self.style, highlight=False)
        self.col += len(word)

    def _print_first(self, word: str) -> None:
        self.console.print(self.indent + word, end="", style=self.style, highlight=False)
        self.col = len(self.indent) + len(word)

    def _newline(self) -> None:
        if self.col:
            self.console.print()
        self.col = 0

    def end(self) -> None:
        self._flush_word()
        self._newline()


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(events: Any, console: Console) -> _Renderer:
    r = _Renderer(console)
    for ev in events:
        r.event(ev)
    return r


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the demo and prints it; returns the process exit code."""
    from rich.console import Console

    from rillet.runner import Runner

    console = Console(width=80, highlight=False, no_color=color is False, force_terminal=color)
    console.print("[bold]rillet demo[/]: a ReAct agent with three tools on a scripted model (offline)")
    console.print("[bold]user[/]")
    out = _Wrapped(console, "  ", "")
    out.write(QUESTION)
    out.end()
    start = time.perf_counter()
    r = render(Runner(build_agent(delay), streaming=streaming).query(QUESTION), console)
    took = time.perf_counter() - start
    console.print(f"\n[dim]{r.events} events · {r.model_calls} model calls · {r.tokens} tokens · {took:.2f} s[/]")
    if delay:
        console.print("[dim]The scripted model pauses between tokens to look live; --fast skips that.[/]")
    return 0
