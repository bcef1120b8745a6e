"""An MCP server for tests/integrations/test_mcp.py, run as ``python tests/support/mcp_servers.py stdio`` or
``python tests/support/mcp_servers.py http PORT``. ``RILLET_MCP_LOG`` names a file where each call
of ``book`` appends a line (to count side effects across processes). ``RILLET_MCP_PAGES``
pages its tool list: ``N`` pages, or ``endless`` (a page of one new tool, and a next cursor,
forever)."""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ListToolsResult, Tool


class Paged(MCPServer):
    """Pages tools/list as ``RILLET_MCP_PAGES`` says."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        pages = os.environ.get("RILLET_MCP_PAGES")
        if not pages:
            return await super()._handle_list_tools(ctx, params)
        page = int(params.cursor) if params is not None and params.cursor else 0
        if pages == "endless":
            return ListToolsResult(
                tools=[Tool(name=f"t{page}", input_schema={"type": "object"})], next_cursor=str(page + 1)
            )
        tools, n = await self.list_tools(), int(pages)
        mine = tools[page * len(tools) // n : (page + 1) * len(tools) // n]
        return ListToolsResult(tools=mine, next_cursor=str(page + 1) if page + 1 < n else None)


app = Paged("testserver", log_level="ERROR")


@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@app.tool()
def echo(text: str) -> str:
    """Returns the text."""
    return text


@app.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"cannot do it: {reason}")


@app.tool()
def picture() -> Image:
    """A one-pixel image."""
    return Image(data=b"\x89PNG\r\n\x1a\n", format="png")


@app.tool()
def book(hotel: str) -> str:
    """Books a hotel."""
    log = os.environ.get("RILLET_MCP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(hotel + "\n")
    return f"booked {hotel}"


@app.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@app.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and says the tool list changed."""

    def extra() -> str:
        """A tool added at run time."""
        return "extra"

    app.add_tool(extra)
    await ctx.notify_tools_changed()  # 2026-07-28 clients (subscriptions/listen)
    await ctx.request_context.session.send_tool_list_changed()  # older clients (a notification)
    return "grown"


@app.tool()
def big(megabytes: float) -> str:
    """A text of that many megabytes."""
    return "x" * int(megabytes * 1_000_000)


@app.tool()
def crash() -> str:
    """The server process dies during the call."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        app.run("stdio")
    else:
        import anyio

        anyio.run(lambda: app.run_streamable_http_async(host="127.0.0.1", port=int(sys.argv[2])))
