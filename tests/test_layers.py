"""The house stays in order: dependencies run one way, no import circles, one event loop.

The import contracts (core imports neither bot/ nor workers/, which never import each other; inside
workers/ adapters ← flows ← jobs; the stand-in and the product apart) are import-linter's, in
pyproject.toml: `make lint` runs them too. Imports under `if TYPE_CHECKING:` and inside functions
count: a circle hidden there is still a circle.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "plumbing", "bot", "workers", "standin")


def test_the_import_contracts_are_kept() -> None:
    loggers = [one for one in logging.Logger.manager.loggerDict.values() if isinstance(one, logging.Logger)]
    enabled = [one for one in loggers if not one.disabled]
    try:
        assert lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0
    finally:  # import-linter configures logging, which disables every logger that exists: later tests read theirs
        for one in enabled:
            one.disabled = False


def test_no_import_circles() -> None:
    """Module by module: import-linter's acyclic_siblings judges whole packages (core.render and
    core.config import each other's modules without any module reaching itself)."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    circular = [
        module
        for module in sorted(graph.modules)
        if any(
            graph.chain_exists(importer=target, imported=module)
            for target in graph.find_modules_directly_imported_by(module)
        )
    ]
    assert circular == []


def test_only_the_rq_entry_points_run_an_event_loop() -> None:
    paths = [ROOT / "plangate.py", *(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))]
    runs = [
        str(path.relative_to(ROOT))
        for path in paths
        if "asyncio.run(" in path.read_text() and path != ROOT / "workers" / "jobs.py"
    ]
    assert runs == []
