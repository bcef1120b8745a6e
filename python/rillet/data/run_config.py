"""RunConfig: per-run settings of the Runner (ADK-Go's ``agent.RunConfig``), and the limits a
run keeps to (ADK's ``max_llm_calls``, and a limit on transfers).

A Runner run (each ``run()`` and each ``resume()``: an invocation, as ADK counts) gets one
:class:`RunBudget`, current in :data:`BUDGET` for every agent of the run: transfer targets,
workflow children and the inner runs of agent tools. Each model call and each transfer is
counted in it; the one past a limit fails with :class:`~rillet.errors.RunLimitExceededError`,
which names the loop the agents were in. The budget also carries whether the invocation was
ended early (:func:`rillet.end_invocation`): every agent of the run reads it there.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from rillet.errors import RunLimitExceededError

__all__ = ["BUDGET", "RunBudget", "RunConfig", "count_llm_call"]

_MODES = ("none", "sse")

DEFAULT_MAX_LLM_CALLS = 500
"""ADK's default: model calls in one run, across every agent of it."""

DEFAULT_MAX_TRANSFERS = 100
"""Transfers in one run. A designed hand-over takes a few per turn (a supervisor's round trip
is two), so a hundred is far above any flow's need, and, below ``max_llm_calls``, it stops two
agents handing the conversation back and forth after 100 model calls, not 500, with an error
that names the transfer loop."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """``streaming_mode``: ``"sse"`` asks models to stream their output (events carry message
    streams), ``"none"`` for whole messages; unset, the Runner's ``streaming`` decides.
    ``save_input_blobs_as_artifacts``: the run's input blobs (``data:`` parts of the input
    messages, realtime blobs of a live run) are saved in the Runner's ``artifact_service``;
    in a message, such a part is replaced by a text naming the artifact.

    ``max_llm_calls`` (default 500, ADK's) bounds the model calls of the whole run, every agent
    of it counted (transfer targets, workflow children, agent tools' agents); ``max_transfers``
    (default 100) bounds its transfers. The call or transfer past a limit ends the run with a
    :class:`~rillet.errors.RunLimitExceededError` event. 0 or None (or, as in ADK, a negative
    number) means no limit. Each ``run()`` and ``resume()`` counts from zero (ADK counts per
    invocation); a resume keeps the limits the run was saved with, unless given others."""

    streaming_mode: Literal["none", "sse"] | None = None
    save_input_blobs_as_artifacts: bool = False
    max_llm_calls: int | None = DEFAULT_MAX_LLM_CALLS
    max_transfers: int | None = DEFAULT_MAX_TRANSFERS

    def __post_init__(self) -> None:
        if self.streaming_mode is not None and self.streaming_mode not in _MODES:
            raise ValueError(f"RunConfig(streaming_mode=...): expected 'none' or 'sse', got {self.streaming_mode!r}")
        if not isinstance(self.save_input_blobs_as_artifacts, bool):
            raise TypeError(
                "RunConfig(save_input_blobs_as_artifacts=...): expected a bool, "
                f"got {type(self.save_input_blobs_as_artifacts).__name__}"
            )
        for name in ("max_llm_calls", "max_transfers"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise TypeError(f"RunConfig({name}=...): expected an int or None, got {value!r} (0 or None: no limit)")

    def streaming(self, default: bool) -> bool:
        """Whether the run streams: the mode when set, else ``default`` (the Runner's)."""
        return default if self.streaming_mode is None else self.streaming_mode == "sse"

    def limits(self) -> dict[str, int]:
        """The limits, as a checkpoint keeps them (0: no limit)."""
        return {"max_llm_calls": _limit(self.max_llm_calls), "max_transfers": _limit(self.max_transfers)}

    def budget(self) -> RunBudget:
        """A new count of one invocation against these limits."""
        return RunBudget(self.max_llm_calls, self.max_transfers)


def _limit(value: int | None) -> int:
    return value if value is not None and value > 0 else 0


_SHOWN_HOPS = 9  # the agents of the last eight transfers: a loop of up to four agents, twice round


class RunBudget:
    """What one invocation has used of its limits (see :class:`RunConfig`). Model calls and
    transfers happen on the run's event loop (a sync tool's thread runs no agent of the run),
    so the counts take no lock. ``ended`` is set (once, to who ended it) by
    :func:`rillet.end_invocation`: the agents stop at their next step (a sync tool's thread
    may set it; the agents read it on the loop)."""

    __slots__ = ("_by_agent", "_hops", "ended", "llm_calls", "max_llm_calls", "max_transfers", "transfers")

    def __init__(self, max_llm_calls: int | None, max_transfers: int | None) -> None:
        self.max_llm_calls = _limit(max_llm_calls)
        self.max_transfers = _limit(max_transfers)
        self.llm_calls = 0
        self.transfers = 0
        self.ended: Any = None  # an InvocationEnded (rillet.run.context) once the invocation is ended
        self._by_agent: dict[str, int] = {}
        self._hops: list[str] = []  # the last _SHOWN_HOPS agents transferred between (a deque costs 760 B a run)

    @classmethod
    def of(cls, limits: Any) -> RunBudget:
        """A budget for ``limits`` as :meth:`RunConfig.limits` wrote them (a checkpoint's);
        the defaults for anything else (a checkpoint from before limits were saved)."""
        if not isinstance(limits, dict):
            return RunConfig().budget()
        return cls(limits.get("max_llm_calls"), limits.get("max_transfers"))

    def limits(self) -> dict[str, int]:
        """The limits counted against, as a checkpoint keeps them."""
        return {"max_llm_calls": self.max_llm_calls, "max_transfers": self.max_transfers}

    def llm_call(self, agent_name: str) -> None:
        """Counts a model call of ``agent_name``; past ``max_llm_calls`` it is refused with
        :class:`RunLimitExceededError` (raised: the agent's run ends with it as its error)."""
        if not self.max_llm_calls or self.llm_calls < self.max_llm_calls:
            self.llm_calls += 1  # only the calls made: a refused one (its agent may go on) is not
            self._by_agent[agent_name] = self._by_agent.get(agent_name, 0) + 1
            return
        top = sorted(self._by_agent.items(), key=lambda kv: -kv[1])[:6]
        calls = ", ".join(f"{name}: {n}" for name, n in top)
        loop, where = self._loop()
        raise RunLimitExceededError(
            "max_llm_calls", self.max_llm_calls, self.llm_calls + 1, loop, f" (calls by agent: {calls}){where}"
        )

    def transfer(self, source: str, dest: str) -> RunLimitExceededError | None:
        """Counts a transfer from ``source`` to ``dest``: None if it may go ahead, else the
        error that ends the run instead (past ``max_transfers``)."""
        self.transfers += 1
        hops = self._hops
        if not hops or hops[-1] != source:  # the first, or one in another part of the run
            hops.append(source)
        hops.append(dest)
        if len(hops) > _SHOWN_HOPS:
            del hops[: len(hops) - _SHOWN_HOPS]
        if not self.max_transfers or self.transfers <= self.max_transfers:
            return None
        loop, where = self._loop()
        return RunLimitExceededError("max_transfers", self.max_transfers, self.transfers, loop, where)

    def _loop(self) -> tuple[str, str]:
        """The last transfers (``a -> b -> a``) and the message's words about them."""
        hops = self._hops
        if len(hops) < 2:
            return "", ""
        loop = " -> ".join(hops)
        shown = ("... -> " if self.transfers >= _SHOWN_HOPS else "") + loop
        cycle = _cycle(hops)
        return loop, f"; the last transfers went {shown}" + (f", round and round {cycle}" if cycle else "")


def _cycle(hops: list[str]) -> str:
    """The shortest cycle ``hops`` keeps repeating (``a -> b -> a``), or "" when they do not."""
    n = len(hops)
    for period in range(1, n // 2 + 1):
        if all(hops[i] == hops[i + period] for i in range(n - period)):
            return " -> ".join(hops[n - period - 1 :])
    return ""


BUDGET: ContextVar[RunBudget | None] = ContextVar("rillet_budget", default=None)
"""The budget of the run the calling code is in: set by the Runner for a run's whole task."""


def count_llm_call(agent_name: str) -> None:
    """Counts a model call of ``agent_name`` in the current run's budget (nothing outside a
    Runner run); raises :class:`RunLimitExceededError` past the run's ``max_llm_calls``."""
    budget = BUDGET.get()
    if budget is not None:
        budget.llm_call(agent_name)
