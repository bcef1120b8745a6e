"""The run layer: what an agent is and the context it runs in.

* :mod:`.agent`: the ``Agent`` protocol, ``AgentInput`` and ``BaseAgent`` (with its in-task
  ``events()`` API and callbacks).
* :mod:`.context`: the run context (``Session``, ``RunContext``, ``ToolCallScope``) and the
  session and run-local functions users call.
* :mod:`.run_handle`: the consumer's end of a run (``RunIterator``, the pump task).
* :mod:`.interrupts`: the user API of interrupts (``interrupt``, ``stateful_interrupt``, ...).
* :mod:`.observer`: ``RunObserver`` and the hooks the flow wrapper and the ReAct steps call.
* :mod:`.plugin`: ``Plugin`` (the Runner's plugins: hooks that may change every call of a run),
  ``LoggingPlugin``, and how their hooks are called.

``plugin`` sits under ``agent`` (which calls the agent hooks), ``context`` and ``run_handle``
under all of them (a second contract in pyproject.toml).

Layer: run. May import rillet.models, rillet.live and the layers under them (the import-linter
contract in pyproject.toml; docs/architecture.md); not tools, the flow or anything above.
"""
