"""The composition layer: agents made of agents.

* :mod:`.workflow`: ``SequentialAgent``, ``LoopAgent`` and ``ParallelAgent``.
* :mod:`.agent_tool`: ``AgentTool``, an agent called as a tool, with its own inner run.

Both save their state in checkpoints (:mod:`rillet.checkpoint.state`) and run their children
through the flow wrapper. The ReAct agent sits above them: its ``task`` sub-agents are agent tools.

Layer: composition. May import rillet.checkpoint and the layers under it (the import-linter
contract in pyproject.toml; docs/architecture.md); not the ReAct agent, sessions or anything above.
"""
