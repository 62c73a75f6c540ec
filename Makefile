# The two commands a newcomer needs: `make demo` runs the product, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# What the tests run for real. Missing ones are installed with apt when root; otherwise one line
# names them and `make test` stops before it starts.
TEST_TOOLS := "terraform|tofu:-:https://opentofu.org/docs/intro/install" git:git redis-server:redis-server \
	bwrap:bubblewrap chromium:chromium kubectl:kubernetes-client

.PHONY: install tools test lint demo clean

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

test: tools lint
	$(BIN)/pytest -q -p no:cacheprovider

demo: install
	$(BIN)/plangate demo $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
