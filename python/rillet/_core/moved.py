"""The old import paths of the modules that moved into the layer packages, kept working.

rillet's loose top-level modules moved into one package per layer (docs/architecture.md):
``rillet.events`` is now :mod:`rillet.data.events`, ``rillet.agent`` :mod:`rillet.run.agent`,
and so on. :data:`MOVED` is the one table of those moves, old dotted path to new. A finder on
``sys.meta_path`` (installed by rillet/__init__.py, after the standard finders, so it never
shadows a real module) answers for the old paths only: importing one imports the new module
and binds that same module object under the old name, so ``import rillet.events`` and
``from rillet.events import AgentEvent`` give the objects ``rillet.data.events`` has. Nothing
is imported until an old path is asked for. New code imports the new paths.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Loader as _Loader
    from importlib.abc import MetaPathFinder as _Finder
else:  # importlib.abc imports 30 more modules (pathlib, tempfile, ...): `import rillet` pays none
    _Loader = _Finder = object

__all__ = ["MOVED", "install"]

# old module path -> new module path
MOVED: dict[str, str] = {
    "rillet._docstrings": "rillet.tools._docstrings",
    "rillet._interpreter": "rillet._core.interpreter",
    "rillet.agent": "rillet.run.agent",
    "rillet.agent_tool": "rillet.compose.agent_tool",
    "rillet.approval": "rillet.tools.approval",
    "rillet.artifacts": "rillet.runner.artifacts",
    "rillet.checkpoint_state": "rillet.checkpoint.state",
    "rillet.codec": "rillet.data.codec",
    "rillet.context": "rillet.run.context",
    "rillet.demo": "rillet.examples.demo",
    "rillet.event_pair": "rillet.data.event_pair",
    "rillet.events": "rillet.data.events",
    "rillet.interrupts": "rillet.run.interrupts",
    "rillet.observer": "rillet.run.observer",
    "rillet.run_config": "rillet.data.run_config",
    "rillet.run_handle": "rillet.run.run_handle",
    "rillet.schema": "rillet.data.schema",
    "rillet.sessions.run": "rillet.sessions.session_run",  # beside the rillet.run package, it read as part of it
    "rillet.workflow": "rillet.compose.workflow",
}


class _Alias(_Loader):
    """Loads an old path as the module at its new one (the same object, not a copy). While
    the first import of an old path runs, the module briefly carries the old path's spec (the
    import system sets it between create_module and exec_module)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has set the alias's spec on the module: give it back its own.
        module.__spec__ = self.spec

    def get_code(self, fullname: str) -> CodeType | None:
        """The new module's code, for ``python -m <old path>`` (runpy asks the loader)."""
        spec = importlib.util.find_spec(self.target)
        loader = spec.loader if spec is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(self.target) if get_code is not None else None


class _MovedFinder(_Finder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Puts the finder on ``sys.meta_path`` once (after the standard finders)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
