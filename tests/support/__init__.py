"""What the tests share: fake servers, agents their child processes import, waiting, row forms.

Imported as ``support.x``: tests/conftest.py puts tests/ on sys.path (pytest's default import
mode), from the source tree and from `make test`'s wheel runs alike. A child process gets tests/
on its PYTHONPATH (``support.waiting.child_env()``), never the source tree's python/."""
