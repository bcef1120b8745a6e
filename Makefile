# The two Quick start commands are `make demo` and `make test`; both set everything up
# (`make demo` only what running rillet needs; `make test` the test and bench extras too).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
STUBTEST = $(PY) -m mypy.stubtest rillet._native --allowlist .stubtest-allowlist
TYPECHECK = $(PY) -m mypy
LINT = $(PY) -m ruff check && $(PY) -m ruff format --check

.PHONY: setup setup-light test-services demo bench test test-fast test-rust stubtest typecheck lint wheels bench-full clean

setup:
	VENV=$(VENV) ./scripts/setup

setup-light:
	VENV=$(VENV) ./scripts/setup --light

# System packages the tests drive (chromium, redis-server), for the test targets only.
test-services:
	./scripts/test-services

demo: setup-light
	$(VENV)/bin/rillet demo

bench: setup
	$(VENV)/bin/rillet bench

# cargo test, stubtest, mypy, ruff check and ruff format --check once; `make wheels` for every
# CPython 3.11-3.13 found here (PATH or pyenv); then each version's wheel is installed into a
# fresh virtualenv and pytest runs against it: the whole suite on the first version (with
# tests/contract/test_packaging.py for the sdist and rillet[all]), the tests of the compiled
# extension's behaviour on the others (scripts/test-all says which; tests/contract/test_wheel.py
# on each). Versions not found are named as skipped; PYTHON_VERSIONS="3.12" limits the run.
# Each virtualenv gets its wheel and the test extra from uv (scripts/setup installs it in .venv).
# pytest runs on PYTEST_WORKERS processes (pytest-xdist; 0: one process). Three on this 2-core
# VM: the suite waits on child processes and servers much of the time (the not-slow suite took
# 4.5 min in one process, 2.4 min on two, 2.0 min on three, 2.3 min on four). The tests marked
# serial then run alone, and those marked stress two at a time (tests/conftest.py says why).
PYTEST_WORKERS ?= 3
test: setup test-services
	PYTEST_WORKERS=$(PYTEST_WORKERS) $(PY) scripts/test-all $(PYTEST_ARGS)

# Quick local loop, one Python (.venv's): skips the slow stress, fuzz, cost-growth and wheel
# tests. stubtest, mypy and ruff run beside pytest (they are one process each; pytest's
# workers wait on child processes much of the time), and the target fails if either side does.
# (No $(MAKE) in the recipe: `make -n test-fast` would run that line.)
test-fast: setup test-services
	@( $(STUBTEST) && $(TYPECHECK) && $(LINT) ) & checks=$$!; \
	$(PY) -m pytest -m "not slow" -q -n $(PYTEST_WORKERS) $(PYTEST_ARGS); tests=$$?; \
	wait $$checks; checked=$$?; \
	if [ $$checked -ne 0 ]; then echo "make test-fast: stubtest, mypy or ruff failed (above)"; fi; \
	exit $$(( tests || checked ))

test-rust:
	cargo test --locked

stubtest:
	$(STUBTEST)

# The typed Python surface, strictly (configuration in pyproject.toml).
typecheck:
	$(TYPECHECK)

# Lint and formatting (rules in pyproject.toml, [tool.ruff]); `ruff format` fixes the layout.
lint:
	$(LINT)

# Release wheels for CPython 3.11, 3.12 and 3.13, tagged manylinux2014 x86_64 (built with zig,
# checked by auditwheel), and the sdist, into dist/; docs/install.md.
wheels:
	VENV=$(VENV) ./scripts/build-wheels

# The pytest-benchmark suites (BENCHES=benches/bench_x.py for one), side by side with the
# peers, BENCH_RUNS times (default 3); then every rillet-vs-peer ratio as the median and
# range over the runs (see docs/benchmarks.md).
BENCH_RUNS ?= 3
BENCHES ?= benches
bench-full: setup
	mkdir -p .benchmarks && rm -f .benchmarks/full-*.json
	for i in $$(seq $(BENCH_RUNS)); do \
		$(PY) -m pytest $(BENCHES) --benchmark-only --benchmark-columns=median,mean,ops,rounds \
			--benchmark-sort=name --benchmark-json=.benchmarks/full-$$i.json $(PYTEST_ARGS) || exit 1; \
	done
	$(PY) benches/ratios.py .benchmarks/full-*.json

clean:
	rm -rf target dist $(VENV) $(VENV)-3.* .pytest_cache .benchmarks
