"""Benchmark workloads shared by `rillet bench` and the pytest-benchmark suites in benches/.

Each workload moves the same items through rillet and through the peers a user would
otherwise reach for, so results are ratios measured in one run, never absolute claims.
"""
