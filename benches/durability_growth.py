"""Bytes written by a 200-turn ReAct run checkpointed at every step: rillet's
``Runner(durability="step")`` on SqliteCheckpointStore against LangGraph's SqliteSaver, on the
same conversation (each turn an assistant message with one tool call and the tool's result, a
paragraph). Prints the totals and, with ``--png PATH``, plots the cumulative bytes written
per step (docs/benchmarks.md shows it).

* rillet: a store wrapper counts the bytes of every ``set`` and ``append`` (records + head);
  the final checkpoint is the head and log after the last step, before the finished run
  deletes them.
* LangGraph: a StateGraph (MessagesState; a model node and a tool node) compiled with
  SqliteSaver, which keeps every checkpoint: the bytes written are its ``checkpoints`` rows
  (checkpoint + metadata) and ``writes`` rows (value), and its final checkpoint the last row.

Run: .venv/bin/python benches/durability_growth.py [--turns 200] [--png docs/images/durability-growth.png]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, SqliteCheckpointStore, ToolCall, tool

WORDS = "the quick brown fox jumps over the lazy dog while the forecast calls for rain in the afternoon".split()


def paragraph(k: int) -> str:
    """The tool's result of turn ``k``: about 300 bytes of text."""
    return f"result {k}: " + " ".join(WORDS[(k + i) % len(WORDS)] for i in range(55))


class CountingStore(SqliteCheckpointStore):
    """Counts the bytes given to the store, after each write."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.cumulative: list[int] = []
        self.final = 0
        self._log = 0

    def _count(self, n: int) -> None:
        self.cumulative.append((self.cumulative[-1] if self.cumulative else 0) + n)

    def set(self, checkpoint_id: str, data: bytes) -> None:
        self._count(len(data))
        self._log = 0
        super().set(checkpoint_id, data)

    def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None:
        n = sum(map(len, records))
        self._count(n + len(head))
        self._log += n
        self.final = self._log + len(head)
        super().append(checkpoint_id, records, head)


def rillet_run(turns: int, path: Path) -> dict[str, Any]:
    def reply(messages: list[Message], tools: Any) -> Message | str:
        k = sum(1 for m in messages if m.role == "tool")
        if k >= turns:
            return f"done after {k} turns"
        call = ToolCall(index=0, id=f"call_{k}", function=FunctionCall("lookup", json.dumps({"k": k})))
        return Message.assistant(tool_calls=[call])

    @tool
    def lookup(k: int) -> str:
        """Looks up k."""
        return paragraph(k)

    agent = ChatModelAgent(
        "agent", description="looks up", model=ScriptedModel(reply), tools=[lookup], max_iterations=turns + 2
    )
    store = CountingStore(path)
    t0 = time.perf_counter()
    events = list(Runner(agent, checkpoint_store=store, durability="step").query("go", checkpoint_id="run"))
    seconds = time.perf_counter() - t0
    assert events[-1].message_output is not None and not [e for e in events if e.error is not None]
    return {"cumulative": store.cumulative, "total": store.cumulative[-1], "final": store.final, "seconds": seconds}


def langgraph_run(turns: int, path: Path) -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # bench extra
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def model(state: Any) -> dict[str, Any]:
        k = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        if k >= turns:
            return {"messages": [AIMessage(content=f"done after {k} turns")]}
        call = {"name": "lookup", "args": {"k": k}, "id": f"call_{k}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def tools(state: Any) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content=paragraph(call["args"]["k"]), tool_call_id=call["id"])]}

    def route(state: Any) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    conn = sqlite3.connect(path, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    t0 = time.perf_counter()
    app.invoke(
        {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "run"}, "recursion_limit": 4 * turns + 10}
    )
    seconds = time.perf_counter() - t0
    writes: dict[str, int] = {}
    for checkpoint_id, size in conn.execute("SELECT checkpoint_id, length(value) FROM writes"):
        writes[checkpoint_id] = writes.get(checkpoint_id, 0) + size
    cumulative, total, final = [], 0, 0
    rows = conn.execute(
        "SELECT checkpoint_id, length(checkpoint) + length(metadata) FROM checkpoints ORDER BY checkpoint_id"
    )
    for checkpoint_id, size in rows:
        total += size + writes.get(checkpoint_id, 0)
        final = size
        cumulative.append(total)
    conn.close()
    return {"cumulative": cumulative, "total": total, "final": final, "seconds": seconds}


def plot(results: dict[str, dict[str, Any]], turns: int, png: Path) -> None:
    import matplotlib  # bench extra: only this plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for label, r in results.items():
        mb = [b / 1e6 for b in r["cumulative"]]
        ax.plot(range(1, len(mb) + 1), mb, label=f"{label}: {r['total'] / 1e6:.2f} MB written")
    ax.set_xlabel("checkpoint writes (one per model call or tool round)")
    ax.set_ylabel("total bytes written (MB)")
    ax.set_title(f"A {turns}-turn ReAct run checkpointed at every step")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--png", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {
            'rillet durability="step" (SqliteCheckpointStore)': rillet_run(args.turns, Path(tmp) / "rillet.db"),
            "LangGraph SqliteSaver": langgraph_run(args.turns, Path(tmp) / "langgraph.db"),
        }
    for label, r in results.items():
        print(
            f"{label:<50} writes {len(r['cumulative']):4d}  total {r['total']:>11,d} B  final {r['final']:>9,d} B  "
            f"total/final {r['total'] / r['final']:7.2f}  run {r['seconds'] * 1e3:7.1f} ms"
        )
    rillet = next(iter(results.values()))
    bound = 1.1 * rillet["final"] + 16 * len(rillet["cumulative"])
    print(
        f"rillet: total {rillet['total']:,d} <= 1.1 x final + 16 B x writes = {bound:,.0f}: {rillet['total'] <= bound}"
    )
    if args.png is not None:
        plot(results, args.turns, args.png)
        print(f"plot: {args.png}")


if __name__ == "__main__":
    main()
