"""A2A (Agent2Agent) for rillet (``pip install rillet[a2a]``); see docs/a2a.md.

:func:`serve_a2a` / :class:`A2AServer` / :func:`a2a_app` serve a rillet agent to A2A clients;
:class:`RemoteA2AAgent` is a local agent whose runs happen on a remote A2A agent.
Importing this package imports the ``a2a-sdk`` package.

Layer: integrations, each independent of the others. May import rillet.runner, rillet.prebuilt,
rillet.middlewares and the layers under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

try:
    import a2a  # noqa: F401  # the rillet[a2a] extra: say so rather than fail on a submodule
except ImportError as e:  # pragma: no cover - the extra is installed wherever this is tested
    raise ImportError(f"rillet.a2a needs the a2a-sdk package: pip install 'rillet[a2a]' ({e})") from e

from rillet.a2a.remote import BeforeRequestCallback, RemoteA2AAgent
from rillet.a2a.server import A2AServer, RilletExecutor, a2a_app, agent_card, serve_a2a
from rillet.errors import A2ACardError, A2AError, A2ATimeoutError

__all__ = [
    "A2ACardError",
    "A2AError",
    "A2AServer",
    "A2ATimeoutError",
    "BeforeRequestCallback",
    "RemoteA2AAgent",
    "RilletExecutor",
    "a2a_app",
    "agent_card",
    "serve_a2a",
]
