"""Which agent a checkpoint belongs to: the root agent's name and a fingerprint of its tree.

The tree is plain data built from what defines a run's addresses and replies: each agent's
name and kind (its class's ``__qualname__``), its tools' names (an agent used as a tool adds
its own tree), and its children (workflow children, transfer targets, wrapped agents), in
order. Models, instructions and object ids are left out, so the same agent built in another
process, or on another model, has the same fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rillet.errors import CheckpointAgentMismatchError
from rillet.flow import FlowAgent, flow_of
from rillet.run.agent import declared_sub_agents, flow_wrapper_of

__all__ = ["CheckpointAgentMismatchError"]


def _unwrap(agent: Any) -> tuple[Any, list[Any]]:
    """The agent a flow wrapper holds and the wrapper's transfer children; an agent given to
    set_sub_agents runs with its wrapper's children, so they are its children too."""
    flow = agent if isinstance(agent, FlowAgent) else flow_of(agent) if flow_wrapper_of(agent) is not None else None
    if flow is not None:
        return flow.agent, declared_sub_agents(flow)
    return agent, []


def agent_tree(agent: Any, _seen: frozenset[int] = frozenset()) -> list[Any]:
    """``[name, kind, tools, children]``: ``tools`` a list of names, or ``[name, tree]`` for
    an agent used as a tool; ``children`` the child agents' trees."""
    inner, children = _unwrap(agent)
    if id(inner) in _seen:  # a cycle: name it, do not follow it
        return [str(inner.name), type(inner).__qualname__, [], []]
    seen = _seen | {id(inner)}
    children += declared_sub_agents(inner)
    wrapped = getattr(inner, "agent", None)  # an agent wrapping one agent (deterministic transfer)
    if wrapped is not None and callable(getattr(wrapped, "run", None)) and hasattr(wrapped, "name"):
        children.insert(0, wrapped)
    tools: list[Any] = []
    listed = getattr(inner, "tools", None)
    for t in listed if isinstance(listed, (list, tuple)) else []:
        name = str(getattr(getattr(t, "info", None), "name", None) or getattr(t, "name", None) or type(t).__qualname__)
        sub = getattr(t, "agent", None)
        tools.append([name, agent_tree(sub, seen)] if sub is not None and hasattr(sub, "run") else name)
    return [str(inner.name), type(inner).__qualname__, tools, [agent_tree(c, seen) for c in children]]


def agent_binding(agent: Any) -> dict[str, Any]:
    """What a checkpoint records of ``agent``: ``{name, fingerprint, tree}``."""
    tree = agent_tree(agent)
    text = json.dumps(tree, separators=(",", ":"), ensure_ascii=True)
    return {"name": tree[0], "fingerprint": hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), "tree": tree}


def _difference(saved: list[Any], now: list[Any], where: str = "") -> str:
    """The first place two trees differ, in words."""
    here = f"{where}/{saved[0]}" if where else str(saved[0])
    if saved[0] != now[0]:
        return f"at {where or 'the root'}: agent {saved[0]!r} was saved, the Runner has {now[0]!r}"
    if saved[1] != now[1]:
        return f"at {here}: kind {saved[1]} was saved, the Runner has {now[1]}"
    names = [t if isinstance(t, str) else t[0] for t in saved[2]]
    now_names = [t if isinstance(t, str) else t[0] for t in now[2]]
    if names != now_names:
        return f"at {here}: tools {names} were saved, the Runner has {now_names}"
    for a, b in zip(saved[2], now[2]):
        if not isinstance(a, str) and not isinstance(b, str) and a[1] != b[1]:
            return _difference(a[1], b[1], f"{here}/tool:{a[0]}")
        if isinstance(a, str) != isinstance(b, str):
            return f"at {here}: tool {a if isinstance(a, str) else a[0]!r} is an agent in one tree only"
    kids, now_kids = [c[0] for c in saved[3]], [c[0] for c in now[3]]
    if kids != now_kids:
        return f"at {here}: sub-agents {kids} were saved, the Runner has {now_kids}"
    for a, b in zip(saved[3], now[3]):
        if a != b:
            return _difference(a, b, here)
    return "the fingerprints differ"


def check_binding(saved: Any, agent: Any, checkpoint_id: str) -> None:
    """Raises :class:`CheckpointAgentMismatchError` if the checkpoint's recorded agent is not
    ``agent``. A checkpoint without a record (written before rillet recorded it) passes."""
    if not isinstance(saved, dict) or "fingerprint" not in saved:
        return
    now = agent_binding(agent)
    if saved["fingerprint"] == now["fingerprint"]:
        return
    try:
        what = _difference(saved["tree"], now["tree"])
    except (KeyError, IndexError, TypeError):  # a tree this rillet does not know how to compare
        what = "the fingerprints differ"
    raise CheckpointAgentMismatchError(
        f"checkpoint[{checkpoint_id}] was saved by agent {saved.get('name')!r}, not by this Runner's agent "
        f"{now['name']!r} ({what}); resume it with a Runner over the agent that saved it. "
        "Nothing was run and the checkpoint is kept"
    )
