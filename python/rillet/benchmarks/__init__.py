"""Benchmark workloads shared by `rillet bench` and the pytest-benchmark suites in benches/.

Each workload moves the same items through rillet and through the peers a user would
otherwise reach for, so results are ratios measured in one run, never absolute claims.

Layer: applications, beside rillet.cli, rillet.web and rillet.examples (which may import each
other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal, rillet.tracing and every
layer under them (the import-linter contract in pyproject.toml; docs/architecture.md).
"""
