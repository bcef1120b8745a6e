"""``python -m rillet.cli``: the `rillet` command."""

from rillet.cli import main

if __name__ == "__main__":  # not when a tool imports every module of the package
    raise SystemExit(main())
