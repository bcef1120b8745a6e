"""An MCP server's tool as a rillet tool."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rillet.tools import BaseTool, ToolInfo, load_arguments

if TYPE_CHECKING:
    from rillet.mcp.toolset import McpToolset


def local_name(prefix: str, remote: str) -> str:
    """A name a model accepts (1 to 64 letters, digits, ``_`` or ``-``) for the server's
    ``remote`` name: other characters become ``_``, and a long name is cut."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", prefix + remote)[:64] or "_"


class McpTool(BaseTool):
    """A tool of an MCP server. Its schema is the server's ``inputSchema`` as given; a call
    goes to the server by the tool's name there (``remote_name``), through the toolset's
    connection, whatever the toolset's cached list holds by then."""

    def __init__(self, toolset: McpToolset, mcp_tool: Any, name: str) -> None:
        self.toolset = toolset
        self.remote_name: str = mcp_tool.name
        description = mcp_tool.description or mcp_tool.title or ""
        self.info = ToolInfo(name, description, dict(mcp_tool.input_schema))

    async def invoke(self, arguments: str) -> str:
        return await self.toolset.call(self.remote_name, load_arguments(self.info.name, arguments))
