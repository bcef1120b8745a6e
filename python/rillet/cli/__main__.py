"""``python -m rillet.cli``: the `rillet` command."""

from rillet.cli import main

raise SystemExit(main())
