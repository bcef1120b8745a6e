"""Ready-made ChatModelAgent middlewares (Eino's ``adk/middlewares``), see docs/middleware.md.

* :class:`Summarization`: past a token trigger, the older part of the conversation becomes a
  summary (a pluggable token counter and summariser, as the sessions' policies take).
* :class:`ToolResultReduction`: long tool results are cut as they arrive; past a token trigger
  the results of older tool rounds are cleared.
* :class:`PatchToolCalls`: a tool call without a result gets a placeholder result before the
  model is called (providers refuse a conversation with an unanswered call).

Layer: driving, beside rillet.runner and rillet.prebuilt (none imports another). May import
rillet.chatmodel, rillet.sessions and the layers under them (the import-linter contract in
pyproject.toml; docs/architecture.md).
"""

from rillet.middlewares.patch_tool_calls import PatchToolCalls
from rillet.middlewares.reduction import ToolResultReduction
from rillet.middlewares.summarization import Summarization

__all__ = ["PatchToolCalls", "Summarization", "ToolResultReduction"]
