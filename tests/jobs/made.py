"""Plan jobs' results without terraform (for tests/test_jobs_results.py): what a batch and a lone plan
job return."""

from __future__ import annotations

from core.plan import parse_plan
from core.results import BatchResult, ProjectResult

NOTHING = parse_plan('{"format_version": "1.2", "resource_changes": []}')


def result(name: str) -> ProjectResult:
    return ProjectResult(name=name, dir=name, workspace="default", tool="terraform", sha="a" * 40, plan=NOTHING)


def lone(name: str) -> ProjectResult:
    return result(name)


def batch(names: list[str]) -> BatchResult:
    return BatchResult({result(n).identity: result(n) for n in names}, {})
