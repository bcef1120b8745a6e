"""rillet's foundation: what every other module builds on, importing only the standard library
and :mod:`rillet._native` (checked by the import-linter contract in pyproject.toml).

* :mod:`.address`: interrupt addresses, one segment type with one string form and one parser.
* :mod:`.interrupt`: the interrupt signal tree and the resume bookkeeping of a resumed run.
* :mod:`.scope`: the run-scope context variables (run, tool call, resume) and their accessors.
* :mod:`.loop`: the background event loop and child tasks; :mod:`.workers`: the worker threads.

Nothing here knows about agents or events; docs/architecture.md draws the layers.
"""
