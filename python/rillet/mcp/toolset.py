"""``McpToolset``: an MCP server's tools as rillet tools."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import operator
import re
import weakref
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from rillet.errors import McpConnectionError, McpError, McpToolError
from rillet.mcp.approval import ApprovalPolicy, check_policy, gate
from rillet.mcp.connection import Connection
from rillet.mcp.results import error_text, result_text
from rillet.mcp.servers import HttpServer, StdioServer, as_server
from rillet.mcp.tool import McpTool, local_name
from rillet.mcp.transports import OVER_LIMIT
from rillet.tools import BaseTool

T = TypeVar("T")

_SSE_OVER_LIMIT = "Server-sent event exceeded the"  # the mcp package's words for an event over the limit
_SESSION_GONE = re.compile(r"session.*(not found|terminated|expired|unknown|invalid)", re.IGNORECASE)


@dataclass(frozen=True)
class ToolFilter:
    """Which of the server's tools to offer: those named in ``allow`` (all when ``None``),
    minus those named in ``block`` (names as the server gives them)."""

    allow: Collection[str] | None = None
    block: Collection[str] = ()

    def __call__(self, tool: Any) -> bool:
        return (self.allow is None or tool.name in self.allow) and tool.name not in self.block


def _say(e: BaseException) -> str:
    """An error as one line for the model: the server's message, or the type and message."""
    from mcp import MCPError  # optional dependency: only rillet.mcp needs it

    e = _leaf(e)
    return e.message if isinstance(e, MCPError) else f"{type(e).__name__}: {e}"


def _session_gone(e: BaseException) -> bool:
    """Whether ``e`` is an HTTP server's answer that it does not know the session (it
    restarted, or dropped an idle session): the request was refused, not run."""
    from mcp import MCPError  # as above

    e = _leaf(e)
    return isinstance(e, MCPError) and bool(_SESSION_GONE.search(e.message))


def _over_limit(e: BaseException) -> bool:
    """Whether ``e`` is the transport refusing an answer over ``max_result_bytes``."""
    from mcp import MCPError  # as above

    e = _leaf(e)
    return isinstance(e, MCPError) and (OVER_LIMIT in e.message or _SSE_OVER_LIMIT in e.message)


def _gone(e: BaseException) -> bool:
    """Whether ``e`` means the connection is gone: closed, a transport failure, or a session
    the server no longer knows."""
    import anyio  # the mcp package's own dependency
    import httpx2  # the mcp package's HTTP client
    from mcp import MCPError  # as above
    from mcp_types import CONNECTION_CLOSED  # as above

    e = _leaf(e)
    if isinstance(e, MCPError):
        return e.code == CONNECTION_CLOSED or _session_gone(e)
    transport = (OSError, httpx2.TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError)
    return isinstance(e, transport)


def _leaf(e: BaseException) -> BaseException:
    """The first real error inside task-group wrappers (anyio reports through ExceptionGroups)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def _close_at_exit(ref: weakref.ref[McpToolset]) -> None:
    toolset = ref()
    if toolset is not None:
        toolset._close_at_exit()


def _whole(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)


class McpToolset:
    """The tools of one MCP server: a toolset (:class:`rillet.tools.toolset.Toolset`) to put
    in an agent's tools, which lists them at the start of every run::

        agent = ChatModelAgent(..., tools=[McpToolset(StdioServer("python", ["server.py"]))])

    Used so, it connects on first use, on the event loop of the run that first needs it, and
    keeps the connection for the runs after, until :meth:`aclose` (a later use connects
    again) or the end of that loop (``asyncio.run`` ending cancels the connection's task,
    which closes it; at interpreter exit a connection on rillet's own loop is closed too).
    A run on another loop while that one runs calls through it; once it has ended, the next
    use connects anew on the current loop.

    Or as an async context manager, which connects at once and closes at the end of the
    block, after which the toolset refuses to be used::

        async with McpToolset(StdioServer("python", ["server.py"])) as toolset:
            agent = ChatModelAgent(..., tools=[*await toolset.tools()])

    Args:
        server: a :class:`StdioServer`, an :class:`HttpServer` or an http(s) URL.
        tool_filter: a :class:`ToolFilter`, or a function of the server's tool (``name``,
            ``description``, ``input_schema``...) returning whether to offer it.
        require_approval: ``"never"`` (default), ``"always"``, a set of tool names, or a
            function ``(tool_name, arguments) -> bool``; such calls interrupt the run for a
            person (:mod:`rillet.tools.approval`).
        prefix: put before every tool's name (two servers with the same tool names).
        timeout: seconds to connect, and for one tool call or listing to answer.
        max_result_bytes: the most bytes one message of the server may have (a tool's
            result, a page of its tool list; default 4,000,000, None: no limit). A call
            answered with more fails with :class:`McpToolError` as soon as the limit is
            passed, and the connection goes on.
        max_list_pages: the most pages a tool listing reads (default 100); a server whose
            list goes on fails the listing with :class:`McpError`.

    The tool list is cached: :meth:`tools` lists from the server the first time, after the
    server says its tools changed (tools/list_changed), after a reconnect, and after
    :meth:`refresh`. A call whose connection is gone (the server process died) reconnects
    first; a call in flight when the server dies fails with :class:`McpConnectionError`,
    which the model sees as the call's error.
    """

    def __init__(
        self,
        server: StdioServer | HttpServer | str,
        *,
        tool_filter: ToolFilter | Callable[[Any], bool] | None = None,
        require_approval: ApprovalPolicy = "never",
        prefix: str = "",
        timeout: float = 60.0,
        max_result_bytes: int | None = 4_000_000,
        max_list_pages: int = 100,
    ) -> None:
        self.server = as_server(server)
        if tool_filter is not None and not callable(tool_filter):
            raise TypeError(
                "McpToolset(tool_filter): a ToolFilter(allow=..., block=...) or a function of the "
                f"server's tool returning bool, got {tool_filter!r}"
            )
        self.tool_filter = tool_filter
        self.require_approval = check_policy(require_approval)
        if not isinstance(prefix, str):
            raise TypeError(f"McpToolset(prefix): a str, got {prefix!r}")
        self.prefix = prefix
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"McpToolset(timeout): a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        if max_result_bytes is not None and not (_whole(max_result_bytes) and max_result_bytes >= 1024):
            raise ValueError(
                f"McpToolset(max_result_bytes): a whole number of bytes of at least 1024, or None, got {max_result_bytes!r}"
            )
        self.max_result_bytes = max_result_bytes
        if not (_whole(max_list_pages) and max_list_pages >= 1):
            raise ValueError(f"McpToolset(max_list_pages): a whole number of at least 1, got {max_list_pages!r}")
        self.max_list_pages = max_list_pages
        self._conn: Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listed: list[Any] | None = None
        self._stale = True
        self._entered = False  # inside `async with`
        self._scope_ended = False  # an `async with` block ended: refuse until entered again
        self._closes = 0  # aclose() calls so far: a call that sees it change was closed, not lost
        self._exit_hook = False
        self._built: tuple[tuple[object, ...], list[BaseTool]] | None = None  # tools() of the last listing

    def __repr__(self) -> str:
        return f"<McpToolset {self.server.label()}>"

    # --- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> McpToolset:
        if self._entered:
            raise RuntimeError(f"{self!r} is already open; use one `async with` per toolset")
        if self._conn is not None:  # opened lazily before: that connection ends first
            await self.aclose()
        self._loop = asyncio.get_running_loop()
        self._lock = asyncio.Lock()
        self._entered = True
        self._scope_ended = False
        try:
            await self._connection()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connection (a stdio server's process ends). A toolset used without
        ``async with`` connects again when it is next used."""
        conn, self._conn = self._conn, None
        if self._entered:
            self._scope_ended = True
        self._entered = False
        self._closes += 1
        if conn is None:
            return
        loop = self._loop
        if loop is not None and loop is not asyncio.get_running_loop():
            if loop.is_running():  # the connection's task lives there
                await self._on_own_loop(conn.close())
            return  # its loop has ended, and cancelled the connection's task with it
        await conn.close()

    def _close_at_exit(self) -> None:
        """At interpreter exit: closes a connection whose loop still runs in another thread
        (rillet's background loop, a daemon, is about to stop without a word)."""
        loop = self._loop
        if self._conn is None or loop is None or not loop.is_running():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(10)

    def _tools_changed(self) -> None:
        self._stale = True

    def _require_open(self) -> None:
        """Refuses a toolset whose `async with` block ended; a toolset used without one takes
        the running loop when it has none, or when the one it had has ended."""
        if self._entered:
            return
        if self._scope_ended:
            raise RuntimeError(f"{self!r} is not open: use it inside `async with McpToolset(...) as toolset:`")
        running = asyncio.get_running_loop()
        loop = self._loop
        if loop is None or (loop is not running and (loop.is_closed() or not loop.is_running())):
            self._loop, self._lock, self._conn, self._stale = running, asyncio.Lock(), None, True
            if not self._exit_hook:
                self._exit_hook = True
                atexit.register(_close_at_exit, weakref.ref(self))

    async def _connection(self) -> Connection:
        """The live connection, opened anew when there is none or it is gone."""
        self._require_open()
        assert self._lock is not None
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.closed:
                return conn
            if conn is not None:
                await conn.close()
            conn = self._conn = Connection(self.server, self._tools_changed, self.max_result_bytes)
            try:
                await conn.open(self.timeout)
            except Exception as e:
                self._conn = None
                cause = _leaf(e)
                why = f"{type(cause).__name__}: {cause}"
                if isinstance(cause, TimeoutError):  # its message is empty
                    why = f"it did not answer within {self.timeout:g}s (the timeout= of McpToolset)"
                raise McpConnectionError(f"cannot connect to the MCP server {self.server.label()}: {why}") from e
            self._stale = True  # a new connection may be to a changed server
            return conn

    # --- tools ------------------------------------------------------------------------------

    async def tools(self) -> list[BaseTool]:
        """The server's tools (filtered, with approval where required) as rillet tools; listed
        from the server when the cache is empty or stale, else from the cache."""
        listed = await self._list(force=False)
        key = (listed, self.tool_filter, self.prefix, self.require_approval)
        built = self._built
        if built is not None and all(map(operator.is_, key, built[0])):  # the same list: the same tools
            return list(built[1])
        out: list[BaseTool] = []
        remote: dict[str, str] = {}  # local name -> the server's name
        for mcp_tool in listed:
            if self.tool_filter is not None and not self.tool_filter(mcp_tool):
                continue
            name = local_name(self.prefix, mcp_tool.name)
            if name in remote:  # the model could not tell them apart: one would shadow the other
                raise McpError(
                    f"MCP server {self.server.label()}: its tools {remote[name]!r} and {mcp_tool.name!r} are both "
                    f"offered as {name!r} (a tool name has only letters, digits, _ and -, at most 64); leave one "
                    "out with tool_filter"
                )
            remote[name] = mcp_tool.name
            out.append(gate(self.require_approval, McpTool(self, mcp_tool, name), mcp_tool.name))
        self._built = (key, out)
        return list(out)

    async def refresh(self) -> list[BaseTool]:
        """Lists the tools from the server now, whatever the cache holds."""
        await self._list(force=True)
        return await self.tools()

    async def _list(self, force: bool) -> list[Any]:
        self._require_open()  # before another loop is asked: the one it was opened on may be gone
        if self._on_other_loop():
            return await self._on_own_loop(self._list(force))
        for attempt in range(2):
            conn = await self._connection()  # may reconnect, which makes the cache stale
            if self._listed is not None and not self._stale and not force:
                return self._listed
            self._stale = False  # a change announced while listing marks it stale again
            try:
                self._listed = await self._list_pages(conn)
                return self._listed
            except McpError:  # rillet's own: the list did not end
                self._stale = True
                raise
            except Exception as e:
                self._stale = True
                if _over_limit(e):
                    raise McpError(
                        f"MCP server {self.server.label()}: listing its tools failed: a page of the list is "
                        f"{self._over()}"
                    ) from e
                if not _gone(e):
                    raise McpError(f"MCP server {self.server.label()}: listing its tools failed: {_say(e)}") from e
                conn.failed = True
                if attempt:  # listing again is harmless: once, on a new connection
                    raise McpConnectionError(
                        f"MCP server {self.server.label()}: the connection was lost while listing its tools ({_say(e)})"
                    ) from e
        raise AssertionError("unreachable")

    async def _list_pages(self, conn: Connection) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(self.max_list_pages):  # a server whose pages never end cannot hang a listing
            page = await asyncio.wait_for(conn.client.list_tools(cursor=cursor), self.timeout)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise McpError(
            f"MCP server {self.server.label()}: its tool list did not end after {self.max_list_pages} pages "
            f"({len(tools)} tools; the server keeps sending a next cursor); if it has more, raise "
            "McpToolset(max_list_pages=...)"
        )

    def _over(self) -> str:
        """What a message over the limit was, for errors."""
        return (
            f"more than {self.max_result_bytes:,} bytes, the toolset's max_result_bytes; ask for less, or raise "
            "McpToolset(max_result_bytes=...)"
        )

    # --- calls ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Calls the server's tool ``name`` and returns its result as text; raises
        :class:`McpToolError` for an error result and :class:`McpConnectionError` when the
        server cannot be reached or dies during the call."""
        self._require_open()  # before another loop is asked: the one it was opened on may be gone
        if self._on_other_loop():
            return await self._on_own_loop(self.call(name, arguments))
        closes = self._closes
        for attempt in range(2):
            conn = await self._connection()
            try:
                result = await asyncio.wait_for(conn.client.call_tool(name, arguments), self.timeout)
                break
            except TimeoutError as e:
                raise McpToolError(
                    f"MCP server {self.server.label()}: tool {name!r} did not answer within {self.timeout:g}s"
                ) from e
            except Exception as e:
                if _over_limit(e):
                    raise McpToolError(
                        f"MCP server {self.server.label()}: tool {name!r} answered with {self._over()}"
                    ) from e
                if not _gone(e):
                    raise McpToolError(f"MCP server {self.server.label()}: tool {name!r} failed: {_say(e)}") from e
                conn.failed = True
                # An HTTP session the server no longer knows (it restarted) refused the call
                # unseen: sending it again on a new session is safe. Anything else may have run.
                if attempt or not _session_gone(e):
                    raise self._lost(name, e, closes != self._closes) from e
        if result.is_error:
            raise McpToolError(f"MCP server {self.server.label()}: tool {name!r} failed: {error_text(result)}")
        return result_text(result)

    def _lost(self, name: str, e: BaseException, closed: bool) -> McpConnectionError:
        if closed:  # aclose() during the call ended the connection, not the server
            return McpConnectionError(
                f"MCP server {self.server.label()}: the toolset was closed during the call of tool {name!r}"
            )
        return McpConnectionError(
            f"MCP server {self.server.label()}: the connection was lost during the call of tool {name!r} "
            f"({_say(e)}); the server process may have died. The next call reconnects."
        )

    # --- loops ------------------------------------------------------------------------------

    def _on_other_loop(self) -> bool:
        return self._loop is not None and asyncio.get_running_loop() is not self._loop

    async def _on_own_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs ``coro`` on the loop the toolset was opened on, which owns the connection (a
        sync ``runner.query`` runs tools on rillet's background loop)."""
        assert self._loop is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)
