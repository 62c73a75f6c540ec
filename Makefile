# The two commands a newcomer needs: `make demo` runs the product, `make test` runs the tests.
# `make unit` is the quick loop while working: the pure and flow tests only (CONTRIBUTING.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# What the tests run for real. Missing ones are installed with apt when root; otherwise one line
# names them and `make test` stops before it starts.
UNIT_TOOLS := "terraform|tofu:-:https://opentofu.org/docs/intro/install" git:git redis-server:redis-server \
	bwrap:bubblewrap
TEST_TOOLS := $(UNIT_TOOLS) chromium:chromium kubectl:kubernetes-client

.PHONY: install tools test test-e2e test-e2e-more test-rest unit unit-flows unit-rest lint demo clean

# The product (with its dev tools) and, as a distribution of its own, the GitHub stand-in.
$(BIN)/plangate: pyproject.toml standin/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e ./standin
	touch $@

install: $(BIN)/plangate

tools:
	@scripts/ensure-tools "make test" $(TEST_TOOLS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache --no-logo

# Everything: the end-to-end and slow tests in two halves (every other file: tests/conftest.py), one on the
# Redis the environment names (PLANGATE_TEST_REDIS_URL, else a private one), one on a private Redis, and
# beside them, on a private Redis of their own, all the others. End-to-end tests mostly wait on their
# workers, so three queues finish sooner than two on two cores.
test: tools lint
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-e2e test-e2e-more test-rest

test-e2e:
	PLANGATE_TEST_SHARD=1/2 $(BIN)/pytest -q -p no:cacheprovider -m "e2e or slow"

test-e2e-more:
	env -u PLANGATE_TEST_REDIS_URL PLANGATE_TEST_SHARD=2/2 $(BIN)/pytest -q -p no:cacheprovider -m "e2e or slow"

test-rest:
	env -u PLANGATE_TEST_REDIS_URL $(BIN)/pytest -q -p no:cacheprovider -m "not e2e and not slow"

# The pure and flow tests: not the end-to-end ones (`e2e`: workers and a web process), not the `slow`
# ones (tests/conftest.py), not the GitHub stand-in's own; `make test` runs everything. The flow tests
# and the rest run side by side, each pytest with a private Redis of its own (both empty it per test).
UNIT := env -u PLANGATE_TEST_REDIS_URL $(BIN)/pytest -q -p no:cacheprovider -m "not e2e and not slow"

unit: install
	@scripts/ensure-tools "make unit" $(UNIT_TOOLS)
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit-flows unit-rest

unit-flows:
	$(UNIT) tests/test_flows*.py

unit-rest:
	$(UNIT) --ignore-glob="tests/test_standin*.py" --ignore-glob="tests/test_flows*.py"

demo: install
	$(BIN)/python -m standin.demo $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
