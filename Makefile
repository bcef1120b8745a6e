# The two Quick start commands are `make demo` and `make test`; both set everything up.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo bench test test-fast test-rust stubtest typecheck bench-full clean

setup:
	./scripts/setup

demo: setup
	$(VENV)/bin/rillet demo

bench: setup
	$(VENV)/bin/rillet bench

test: setup test-rust stubtest typecheck
	$(PY) -m pytest $(PYTEST_ARGS)

# Quick local loop: skips the slow stress and fuzz tests.
test-fast: setup stubtest typecheck
	$(PY) -m pytest -m "not slow" -q $(PYTEST_ARGS)

test-rust:
	cargo test --locked

stubtest:
	$(PY) -m mypy.stubtest rillet._native --allowlist .stubtest-allowlist

# The typed Python surface, strictly (configuration in pyproject.toml).
typecheck:
	$(PY) -m mypy

# The pytest-benchmark suites, side by side with the peers (see docs/benchmarks.md).
bench-full: setup
	$(PY) -m pytest benches --benchmark-only --benchmark-columns=median,mean,ops,rounds \
		--benchmark-sort=name $(PYTEST_ARGS)

clean:
	rm -rf target $(VENV) .pytest_cache .benchmarks
