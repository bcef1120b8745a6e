"""What the stores on a server (Redis, PostgreSQL) share: URLs shown without their password, and
the error that says a server cannot be reached and what to do about it."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from rillet.errors import CheckpointError

__all__ = ["check_prune", "redacted", "unreachable"]


# libpq takes a password as a keyword (``password=x``, ``password = 'a b'``) in a connection
# string, and in a URL's query too
_PASSWORD_KEYWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def redacted(url: str) -> str:
    """``url`` with any password replaced by ``***``, fit for an error message or a log."""
    url = _PASSWORD_KEYWORD.sub(r"\1***", url)
    if "://" not in url:  # a libpq keyword string
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def unreachable(store: str, url: str, error: BaseException, server: str) -> CheckpointError:
    """The error for a ``server`` (e.g. "Redis") that ``store`` cannot reach at ``url``."""
    return CheckpointError(
        f"{store}: cannot reach {server} at {redacted(url)} ({type(error).__name__}: {error}); "
        f"start {server} there, or pass the URL of a running server"
    )


def check_prune(older_than: float | None, keep_last: int | None) -> None:
    """Refuses ``prune`` arguments that are not a number of seconds and a count."""
    if older_than is not None and (
        isinstance(older_than, bool) or not isinstance(older_than, int | float) or not older_than >= 0
    ):
        raise ValueError(f"prune: older_than must be a number of seconds, 0 or more, got {older_than!r}")
    if keep_last is not None and (isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0):
        raise ValueError(f"prune: keep_last must be a whole number, 0 or more, got {keep_last!r}")
