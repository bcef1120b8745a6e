"""``python -m rillet.web ...`` is ``rillet web ...``: one command line, one set of checks."""

from __future__ import annotations

import sys

from rillet.cli import main

if __name__ == "__main__":
    sys.exit(main(["web", *sys.argv[1:]]))
