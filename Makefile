# The two Quick start commands are `make bench` and `make test`; both set everything up.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup bench test test-fast test-rust test-python stubtest bench-full clean

setup:
	./scripts/setup

bench: setup
	$(VENV)/bin/rillet bench

test: setup test-rust stubtest
	$(PY) -m pytest $(PYTEST_ARGS)

# Quick local loop: skips the slow stress and fuzz tests.
test-fast: setup stubtest
	$(PY) -m pytest -m "not slow" -q $(PYTEST_ARGS)

test-rust:
	cargo test --locked

stubtest:
	$(PY) -m mypy.stubtest rillet._native --allowlist .stubtest-allowlist

# The pytest-benchmark suites, side by side with the peers (see docs/benchmarks.md).
bench-full: setup
	$(PY) -m pytest benches --benchmark-only --benchmark-columns=median,mean,ops,rounds \
		--benchmark-sort=name $(PYTEST_ARGS)

clean:
	rm -rf target $(VENV) .pytest_cache .benchmarks
