"""``python -m rillet.web MODULE:ATTRIBUTE [--db FILE] [--host H] [--port P] [--allow-remote]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rillet.cli import load_agent
from rillet.errors import RilletError
from rillet.web import serve


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rillet.web", description="rillet's dev UI in the browser.")
    p.add_argument("agent", metavar="MODULE:ATTRIBUTE", help="an agent, or a function of no arguments returning one")
    p.add_argument("--db", help="the SQLite checkpoint file (default: checkpoints in memory)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="the port (default: 8000)")
    p.add_argument("--allow-remote", action="store_true", help="allow a host other machines can reach (a warning)")
    args = p.parse_args(argv)
    try:
        agent = load_agent(args.agent)
        serve(agent, db=args.db, host=args.host, port=args.port, allow_remote=args.allow_remote)
    except (ValueError, ImportError, RilletError) as e:
        print(" ".join(str(e).split()), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
