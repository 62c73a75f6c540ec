"""The order of one change's projects from the default branch's `depends_on` (pure; core.apply_order
says what an order is).

The policy's `depends_on` counts for a project only when its name, workspace and dir all match the
project's (as for `gate_code_at_apply`): a change cannot borrow another project's place by its name.
A project the change deleted is no longer in the policy: the order its own commit declared is used,
reversed (core.apply_order).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.apply_order import dependents, waits
from core.config import RepoConfig
from core.projects import Project


def _declared(policy: RepoConfig) -> dict[tuple[str, str, str], tuple[str, ...]]:
    return {(p.name, p.workspace, p.dir): p.depends_on for p in policy.projects or ()}


def merge_waits(policy: RepoConfig, projects: Sequence[Project]) -> dict[str, tuple[str, ...]]:
    """Project name → the names of the change's projects whose apply ends before its own begins.
    ValueError naming the cycle when a deleted project's old order and the policy's loop together."""
    declared = _declared(policy)
    graph = {
        p.name: p.depends_on if p.destroy_from else declared.get((p.name, p.workspace, p.dir), ()) for p in projects
    }
    return waits(graph, [p.name for p in projects], {p.name for p in projects if p.destroy_from})


def with_dependents(policy: RepoConfig, every: Sequence[Project], chosen: Sequence[Project]) -> list[Project]:
    """`chosen`, then (`plan_dependents: true`) the projects of `every` that depend on one of them,
    directly or through others, as the policy declares it; `chosen` alone otherwise."""
    if not policy.plan_dependents:
        return list(chosen)
    declared = _declared(policy)
    graph = {p.name: declared.get((p.name, p.workspace, p.dir), ()) for p in every}
    names = {p.name for p in chosen}
    added = set(dependents(graph, names)) - names
    return [*chosen, *(p for p in every if p.name in added and not p.destroy_from)]
