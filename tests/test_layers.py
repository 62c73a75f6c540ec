"""The house stays in order: dependencies run one way, no import circles, one event loop.

core/ (pure domain and the web/worker contract) imports neither bot/ nor workers/; bot/ (the web
process) never imports workers/ and workers/ never imports bot/; the product never imports the
GitHub stand-in (standin/, its own distribution) and the stand-in imports none of the product;
inside workers/, adapters never import flows and neither imports the RQ entry points. Imports
under `if TYPE_CHECKING:` and inside functions count too: a circle hidden there is still a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "bot", "workers", "standin")


def _modules() -> dict[str, Path]:
    found = {"plangate": ROOT / "plangate.py"}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield full if full in known else base


def _graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for imported in _imports(name, path, known):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _top(module: str) -> str:
    return module.split(".")[0]


def test_dependencies_run_one_way() -> None:
    forbidden = {
        "core": {"bot", "workers", "plangate", "standin"},
        "bot": {"workers", "plangate", "standin"},
        "workers": {"bot", "plangate", "standin"},
        "standin": {"core", "bot", "workers", "plangate"},  # it drives plangate's processes from outside
    }
    wrong = [
        f"{source} → {target}"
        for source, targets in _graph().items()
        for target in targets
        if _top(target) in forbidden.get(_top(source), set())
    ]
    assert wrong == []


def test_inside_workers_adapters_know_no_flows_and_nothing_knows_the_entry_points() -> None:
    wrong = []
    for source, targets in _graph().items():
        for target in targets:
            if source.startswith("workers.adapters") and target.startswith(("workers.flows", "workers.jobs")):
                wrong.append(f"{source} → {target}")
            if source.startswith("workers.flows") and target == "workers.jobs":
                wrong.append(f"{source} → {target}")
    assert wrong == []


def test_no_import_circles() -> None:
    """Tarjan's strongly connected components: any component of more than one module is a circle."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert circles == []


def test_only_the_rq_entry_points_run_an_event_loop() -> None:
    runs = [
        str(path.relative_to(ROOT))
        for path in _modules().values()
        if "asyncio.run(" in path.read_text() and path != ROOT / "workers" / "jobs.py"
    ]
    assert runs == []
