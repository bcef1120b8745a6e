"""The data layer: the values a run moves around, and how they are written down.

* :mod:`.schema`: messages and streams (Eino's ``schema``), the Rust types plus the asyncio halves.
* :mod:`.codec`: the checkpoint codec's Python side (``encode``, ``decode``, ``register_type``);
  public as ``rillet.codec``.
* :mod:`.event_pair`: the ``EventIterator`` / ``EventGenerator`` pair joined by a Channel.
* :mod:`.events`: ``AgentEvent`` and its parts, and the rule that turns an exception into the
  last event of a stream (the one module here over the others: it carries their values).
* :mod:`.run_config`: ``RunConfig``.

Layer: data. May import rillet._core and the layers under it (the import-linter contract in
pyproject.toml; docs/architecture.md), and nothing of agents, runs or tools.
"""
