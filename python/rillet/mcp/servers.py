"""Where an MCP server is: a command to start (stdio) or a URL (streamable HTTP)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StdioServer:
    """An MCP server started as a subprocess, spoken to over its stdin and stdout.

    ``env`` is added to a minimal default environment (the mcp package's: PATH, HOME and the
    like), not to this process's whole environment; ``cwd`` is its working directory.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command:
            raise TypeError(f"StdioServer(command): the program to run, a non-empty str, got {self.command!r}")
        if isinstance(self.args, str) or not all(isinstance(a, str) for a in self.args):
            raise TypeError(f"StdioServer(args): a list of str arguments, got {self.args!r}")
        object.__setattr__(self, "args", tuple(self.args))
        if self.env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise TypeError("StdioServer(env): a dict of str names to str values")

    def label(self) -> str:
        return " ".join([self.command, *self.args])

    def target(self, max_message_bytes: int | None) -> Any:
        """A transport to this server for the mcp package's Client, reading no message of
        more than ``max_message_bytes`` whole (None: no limit)."""
        from mcp import StdioServerParameters  # optional dependency: only rillet.mcp needs it

        from rillet.mcp.transports import stdio_transport  # imports mcp too: loaded with it

        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=dict(self.env) if self.env else None, cwd=self.cwd
        )
        return stdio_transport(params, max_message_bytes)


@dataclass(frozen=True)
class HttpServer:
    """An MCP server at a streamable-HTTP endpoint, such as ``http://127.0.0.1:8000/mcp``;
    ``headers`` (an ``Authorization`` header, say) go with every request."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ValueError(f"HttpServer(url): an http:// or https:// URL, got {self.url!r}")

    def label(self) -> str:
        return self.url

    def target(self, max_message_bytes: int | None) -> Any:
        """As :meth:`StdioServer.target`."""
        from rillet.mcp.transports import http_transport  # imports mcp too: loaded with it

        return http_transport(self.url, self.headers, max_message_bytes)


McpServer = StdioServer | HttpServer


def as_server(server: Any) -> McpServer:
    """``server`` as a server description: a StdioServer or HttpServer as is, a URL string
    as an HttpServer."""
    if isinstance(server, (StdioServer, HttpServer)):
        return server
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return HttpServer(server)
    raise TypeError(
        f"McpToolset(server): a StdioServer(command, args), an HttpServer(url) or an http(s) URL, got {server!r}"
    )
