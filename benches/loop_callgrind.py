"""Instructions (valgrind callgrind) per LoopAgent round at 1,000 and 8,000 rounds: whether a
round's cost grows with the round count (docs/benchmarks.md, "LoopAgent rounds").

    .venv/bin/python benches/loop_callgrind.py [rounds ...]   # default: 1000 8000

Children: `say` yields one event and never reads its input (the framework's own cost per
round); `read` also reads `input.messages`, the whole history so far, which a child is handed
by design (Eino's history), so it grows with the rounds. Each count is (a process running the
loop for N rounds - one for 0) / N, after a one-round warm-up in both.
"""

from __future__ import annotations

import sys

from callgrind_util import per_operation, print_table

CODE = """
import asyncio
from rillet import BaseAgent, LoopAgent, Message, Runner, event_from_message
class Say(BaseAgent):
    async def _run(self, input, **options):
        yield event_from_message(Message.assistant(self.name))
class Read(BaseAgent):
    async def _run(self, input, **options):
        len(input.messages)
        yield event_from_message(Message.assistant(self.name))
async def main(n):
    async for ev in Runner(LoopAgent("loop", sub_agents=[{kid}("a")], max_iterations=n)).query("go"):
        pass
asyncio.run(main(1))
if {n}:
    asyncio.run(main({n}))
"""

KIDS = {"say (k instr per round)": "Say", "read (k instr per round)": "Read"}


def _per_round(rounds: int, kid: str) -> float:
    """Thousands of instructions per round of a ``rounds``-round loop of ``kid`` children."""
    return per_operation(lambda n: CODE.format(kid=kid, n=n), rounds) / 1e3


def main() -> None:
    rounds = [int(a) for a in sys.argv[1:]] or [1000, 8000]
    print_table(
        [f"{n:,} rounds" for n in rounds],
        list(KIDS),
        lambda row, col: _per_round(int(row.split()[0].replace(",", "")), KIDS[col]),
        ",.0f",
    )


if __name__ == "__main__":
    main()
