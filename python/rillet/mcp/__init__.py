"""MCP servers' tools as rillet tools (``pip install rillet[mcp]``); see docs/mcp.md.

Importing this package does not import the ``mcp`` package: it is loaded when a toolset
connects.

Layer: integrations, each independent of the others. May import rillet.runner, rillet.prebuilt,
rillet.middlewares and the layers under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.errors import McpConnectionError, McpError, McpToolError
from rillet.mcp.approval import ApprovalPolicy
from rillet.mcp.servers import HttpServer, StdioServer
from rillet.mcp.tool import McpTool
from rillet.mcp.toolset import McpToolset, ToolFilter

__all__ = [
    "ApprovalPolicy",
    "HttpServer",
    "McpConnectionError",
    "McpError",
    "McpTool",
    "McpToolError",
    "McpToolset",
    "StdioServer",
    "ToolFilter",
]
