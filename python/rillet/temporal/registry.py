"""The agents of this process's workers, by task queue and name: the workflow, in its
sandbox, and the worker outside it look them up here (rillet's modules are passed through
the sandbox: both see the same dict)."""

from __future__ import annotations

from collections.abc import Callable

from temporalio.exceptions import ApplicationError

from rillet.run.agent import Agent

__all__ = ["AgentFactory", "agent_for", "register"]

AgentFactory = Callable[[], Agent]

# task queue -> agent name -> factory
_agents: dict[str, dict[str, AgentFactory]] = {}


def agent_for(task_queue: str, name: str) -> Agent:
    """A fresh agent tree built by the factory registered as ``name`` on ``task_queue``."""
    factories = _agents.get(task_queue, {})
    if name not in factories:
        raise ApplicationError(
            f"no agent {name!r} on task queue {task_queue!r}; its workers know {sorted(factories)} "
            "(pass agents={name: factory} to rillet_worker)",
            non_retryable=True,
        )
    return factories[name]()


def register(task_queue: str, factories: dict[str, AgentFactory]) -> None:
    """Makes ``factories`` the agents of ``task_queue`` in this process."""
    _agents[task_queue] = factories
