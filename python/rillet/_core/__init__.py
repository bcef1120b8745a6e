"""rillet's foundation: what every other module builds on.

* :mod:`.address`: interrupt addresses, one segment type with one string form and one parser.
* :mod:`.interrupt`: the interrupt signal tree and the resume bookkeeping of a resumed run.
* :mod:`.scope`: the run-scope context variables (run, tool call, resume) and their accessors.
* :mod:`.loop`: the background event loop and child tasks; :mod:`.workers`: the worker threads.
* :mod:`.interpreter`: refuses subinterpreters (imported first by rillet/__init__.py);
  :mod:`.moved`: the old import paths of the modules that moved into the layer packages.

Nothing here knows about agents or events. Layer: foundation. May import rillet.errors, the
standard library and rillet._native only (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""
