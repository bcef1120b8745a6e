"""One live connection to an MCP server, owned by one task.

The mcp package's ``Client`` must be entered and left by the same task (its anyio task
group), so a holder task enters it, hands it out, and leaves it when asked to close. A
server that dies closes the connection; the toolset then opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from rillet.mcp.servers import McpServer

log = logging.getLogger("rillet.mcp")

_CLOSE_TIMEOUT = 5.0


class Connection:
    """An entered ``mcp.Client`` for ``server``; ``on_tools_changed`` runs on each
    tools/list_changed the server sends (a notification on older protocol versions, a
    ``subscriptions/listen`` event on 2026-07-28 and later). No message over
    ``max_message_bytes`` is read whole: its request fails instead."""

    def __init__(
        self, server: McpServer, on_tools_changed: Callable[[], None], max_message_bytes: int | None = None
    ) -> None:
        self.server = server
        self.max_message_bytes = max_message_bytes
        self._on_tools_changed = on_tools_changed
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.client: Any = None
        self.failed = False

    async def open(self, seconds: float) -> None:
        """Connects, within ``seconds``."""
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"rillet-mcp {self.server.label()}")
        try:
            self.client = await asyncio.wait_for(asyncio.shield(ready), seconds)
        except BaseException:
            await self.close()
            raise

    @property
    def closed(self) -> bool:
        """Whether the transport is known to be gone: a request sent now cannot be delivered."""
        if self.failed or self._task is None or self._task.done():
            return True
        # The mcp package has no public flag; its dispatcher records the end of the stream.
        dispatcher = getattr(getattr(self.client, "_session", None), "_dispatcher", None)
        return bool(getattr(dispatcher, "_closed", False))

    async def close(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_TIMEOUT)
        except TimeoutError:  # a transport stuck in its shutdown: abandon it (cancelled)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _hold(self, ready: asyncio.Future[Any]) -> None:
        from mcp import Client  # optional dependency: only rillet.mcp needs it

        try:
            async with Client(
                self.server.target(self.max_message_bytes), message_handler=self._message, cache=None
            ) as client:
                listener = asyncio.create_task(self._listen(client)) if self._can_listen(client) else None
                ready.set_result(client)
                try:
                    await self._stop.wait()
                finally:
                    if listener is not None:
                        listener.cancel()
                        with contextlib.suppress(BaseException):
                            await listener
        except BaseException as e:
            self.failed = True
            if not ready.done():
                ready.set_exception(e)
            elif not isinstance(e, (Exception, asyncio.CancelledError)):
                raise
            else:
                log.debug("MCP connection to %s ended: %r", self.server.label(), e)

    async def _message(self, message: Any) -> None:
        import mcp_types  # optional dependency, as above

        root = getattr(message, "root", message)
        if isinstance(root, mcp_types.ToolListChangedNotification):
            self._on_tools_changed()

    @staticmethod
    def _can_listen(client: Any) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # optional dependency, as above

        tools = client.server_capabilities.tools
        return bool(tools and tools.list_changed) and client.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def _listen(self, client: Any) -> None:
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._on_tools_changed()
        except Exception as e:  # noqa: BLE001  (the server went away or refused: tool calls report it)
            log.debug("MCP tools/list_changed subscription to %s ended: %r", self.server.label(), e)
