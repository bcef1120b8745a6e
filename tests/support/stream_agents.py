"""An agent whose run holds every kind of event a RedisStreamSink sends, and each event as a
comparable row, for the fan-out tests (also run as a reader process: `python stream_agents.py`)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from rillet import (
    AgentAction,
    AgentEvent,
    AgentInput,
    AgentOutput,
    BaseAgent,
    Message,
    event_from_message,
    new_exit_action,
    new_transfer_to_agent_action,
    stream_from_list,
)


class Mixed(BaseAgent):
    """``events`` events cycling through: whole messages, streamed messages (3 chunks), tool
    results, customized outputs, actions; then an error event."""

    def __init__(self, events: int) -> None:
        super().__init__("mixed", "every kind of event")
        self.events = events

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for i in range(self.events - 1):
            if i % 64 == 0:
                await asyncio.sleep(0)  # as a model or tool call would: the loop serves others
            k = i % 8
            if k == 1:
                chunks = [Message.assistant(f"s{i}-"), Message(content="a"), Message(content="b")]
                yield event_from_message(None, stream_from_list(chunks))
            elif k == 3:
                yield event_from_message(
                    Message.tool_message(f"r{i}", f"c{i}", "lookup"), role="tool", tool_name="lookup"
                )
            elif k == 5:
                yield AgentEvent(output=AgentOutput(customized_output={"i": i, "xs": [1.5, None, "x"]}))
            elif k == 6:
                yield AgentEvent(action=new_transfer_to_agent_action("other") if i % 16 == 6 else new_exit_action())
            elif k == 7:
                yield AgentEvent(action=AgentAction(customized_action=("mine", i)))
            else:
                yield event_from_message(Message.assistant(f"m{i}"))
        if asyncio.current_task() is not None:  # always: keeps the generator a generator
            raise ValueError(f"failed after {self.events - 1} events")


async def arow(ev: AgentEvent) -> list[Any]:
    """The event as JSON-able data: everything a reader must see the same (a stream's chunks
    read one by one)."""
    out: list[Any] = [ev.agent_name, [s.agent_name for s in ev.run_path]]
    mv = ev.message_output
    if mv is not None:
        if mv.message is None and mv.message_stream is not None:
            chunks = [c.to_dict() async for c in mv.message_stream]
            out += ["stream", mv.role, mv.tool_name, chunks]
        else:
            assert mv.message is not None
            out += ["message", mv.role, mv.tool_name, mv.is_streaming, mv.message.to_dict()]
    if ev.output is not None and ev.output.customized_output is not None:
        out += ["custom", repr(ev.output.customized_output)]
    a = ev.action
    if a is not None:
        transfer = a.transfer_to_agent.dest_agent_name if a.transfer_to_agent else None
        interrupts = None
        if a.interrupted is not None:
            interrupts = [
                [c.id, list(c.address), repr(c.info), c.is_root_cause] for c in a.interrupted.interrupt_contexts
            ]
        out += ["action", a.exit, transfer, repr(a.customized_action), interrupts]
    if ev.error is not None:
        out += [
            "error",
            getattr(ev.error, "type_name", type(ev.error).__name__),
            getattr(ev.error, "message", str(ev.error)),
        ]
    return out


async def read_rows(url: str, run_id: str, out_path: str, disconnect_at: int) -> None:
    """A reader process: writes each event's row as a JSON line; after ``disconnect_at`` events
    (0: never) it drops its connection and resumes from ``last_id`` with a new one."""
    from rillet.redis import RedisStreamSource

    after, count = "0-0", 0
    with open(out_path, "w") as out:  # noqa: ASYNC230  # this process's own file, written as it reads
        while True:
            source = RedisStreamSource(run_id, url=url, after=after, timeout=60)
            async with source:
                async for ev in source:
                    out.write(json.dumps(await arow(ev)) + "\n")
                    count += 1
                    if count == disconnect_at:
                        break
                else:
                    out.write(json.dumps(["status", source.status]) + "\n")
                    return
                after = source.last_id


if __name__ == "__main__":
    asyncio.run(read_rows(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
