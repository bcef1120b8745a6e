"""Toolsets: sources of tools that an agent asks for its tools when a run starts.

A toolset is anything with ``async def tools(self) -> list[BaseTool]`` (the
:class:`Toolset` protocol): :class:`rillet.mcp.McpToolset` is one, and so is a class of a
few lines of your own. Put it in ``ChatModelAgent(tools=[...])`` beside plain tools: every
run (a resumed one too) asks it for its tools before the model is first called, so a
toolset whose tools change between runs offers the new ones. ``tools()`` runs inside the
run, so it may read the session (:func:`rillet.get_session_value`) to decide what to offer.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

from rillet.tools import BaseTool

__all__ = ["Toolset", "check_toolset", "is_toolset", "toolset_tools"]


@runtime_checkable
class Toolset(Protocol):
    """A source of tools, asked for them at the start of every run of the agent holding it.

    ``tools()`` returns the tools to offer for this run (a list of
    :class:`~rillet.tools.BaseTool`); it may return the same objects every time or new ones.
    A plain ``def tools(self)`` returning the list is accepted too."""

    async def tools(self) -> list[BaseTool]: ...


def is_toolset(obj: object) -> bool:
    """Whether ``obj`` is a toolset: not a tool or a class, with a callable ``tools``. (An
    agent's ``tools`` is a list, not a method, so an agent is not one.)"""
    return not isinstance(obj, (BaseTool, type)) and callable(getattr(obj, "tools", None))


def check_toolset(toolset: Any, where: str) -> None:
    """Refuses, when it is given, a toolset whose ``tools`` cannot be called without arguments
    (Google ADK-Go's ``Tools(ctx)``, say) rather than failing every run."""
    try:
        inspect.signature(toolset.tools).bind()
    except ValueError:  # no signature to read (a builtin): not checkable
        return
    except TypeError as e:
        raise TypeError(
            f"{where}: toolset {type(toolset).__name__}: its tools() cannot be called without arguments ({e}); "
            "rillet calls tools() with none (the run's context is in contextvars: read the session with "
            "rillet.get_session_value)"
        ) from None


async def toolset_tools(toolset: Any, where: str) -> list[BaseTool]:
    """The tools ``toolset`` offers now, checked: a list (or tuple) of BaseTool instances.
    ``where`` names the agent in the errors."""
    found = toolset.tools()
    if inspect.isawaitable(found):
        found = await found
    if not isinstance(found, (list, tuple)):
        raise TypeError(
            f"{where}: the toolset {toolset!r} returned {type(found).__name__} from tools(); "
            "it must return a list of BaseTool"
        )
    for t in found:
        if not isinstance(t, BaseTool):
            raise TypeError(
                f"{where}: the toolset {toolset!r} offered {type(t).__name__} {t!r:.60}; tools() must return "
                "BaseTool instances (wrap a function with rillet.tool)"
            )
    return list(found)
