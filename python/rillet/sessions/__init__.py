"""Sessions: conversations kept by id across runs (see docs/sessions.md).

``Runner(agent, session_store=SqliteSessionStore("app.db"), session_policy=LastTurns(20))``
then ``runner.query(text, session_id="alice")``: the run sees the session's history before its
input, and its messages and changed values are appended when it ends.

Layer: ReAct and sessions, rillet.sessions beside rillet.chatmodel (neither imports the other). May
import rillet.compose and the layers under it (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.sessions.memory import InMemorySessionStore
from rillet.sessions.policies import LastTurns, SessionPolicy, SummarizeOldest, TokenBudget, approx_tokens
from rillet.sessions.protocol import SessionData, SessionInfo, SessionStore, Turn
from rillet.sessions.sqlite import SqliteSessionStore

__all__ = [
    "InMemorySessionStore",
    "LastTurns",
    "SessionData",
    "SessionInfo",
    "SessionPolicy",
    "SessionStore",
    "SqliteSessionStore",
    "SummarizeOldest",
    "TokenBudget",
    "Turn",
    "approx_tokens",
]
