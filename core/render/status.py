"""Commit status (state, description) pairs for plangate/plan and plangate/destroy (pure).

GitHub rejects a description over 140 characters with a 422, so every description passes
through `describe()`, which collapses whitespace and clips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from core.render.text import one_line
from core.results import ProjectResult

State = Literal["pending", "success", "failure", "error"]
MAX_DESCRIPTION = 140


def describe(text: str) -> str:
    """A status description: one line, at most 140 characters."""
    return one_line(text, MAX_DESCRIPTION)


def failed(result: ProjectResult) -> bool:
    """Planning did not produce a usable plan (error, no plan, or a plan that says it errored)."""
    return result.error is not None or result.plan is None or result.plan.errored


def _names(results: Sequence[ProjectResult]) -> str:
    return ", ".join(r.name or r.dir for r in results)


def pending_status(n_projects: int) -> tuple[State, str]:
    noun = "project" if n_projects == 1 else "projects"
    return "pending", describe(f"Planning {n_projects} {noun}…")


def plan_status(results: Sequence[ProjectResult]) -> tuple[State, str]:
    """success when every plan ran (destroys included: only plangate/destroy gates them)."""
    if not results:
        return "success", "No Terraform project affected"
    bad = [r for r in results if failed(r)]
    if bad:
        state: State = "error" if any(r.plangate_fault for r in bad) else "failure"
        return state, describe(f"{len(bad)} of {len(results)} plans failed: {_names(bad)}")
    add = change = destroy = 0
    for r in results:
        assert r.plan is not None  # not failed
        counts = r.plan.counts
        add, change, destroy = add + counts["add"], change + counts["change"], destroy + counts["destroy"]
    noun = "project" if len(results) == 1 else "projects"
    return "success", describe(f"{len(results)} {noun} planned: {add} to add, {change} to change, {destroy} to destroy")


def destroy_count(results: Sequence[ProjectResult]) -> int:
    return sum(len(r.plan.destroys) for r in results if r.plan is not None)


def destroy_status(
    results: Sequence[ProjectResult], approved_by: str | None = None, approved_count: int = 0
) -> tuple[State, str]:
    """The gate: failure until every destroy is approved; failure when any plan failed (fail closed).

    `approved_count` is how many of these destroys the approval covers; it must cover all of them.
    """
    bad = [r for r in results if failed(r)]
    if bad:
        return "failure", describe(f"Cannot check destroys: {len(bad)} plans failed: {_names(bad)}")
    total = destroy_count(results)
    if total == 0:
        return "success", "No destroys"
    noun = "destroy" if total == 1 else "destroys"
    if approved_by and approved_count >= total:
        login = one_line(approved_by, 60)
        return "success", describe(f"{total} {noun} approved by @{login}")
    partly = f" ({approved_count} approved)" if approved_by and approved_count > 0 else ""
    return "failure", describe(f"{total} to destroy{partly} — comment /approve-destroy")


def held_by_others(numbers: Sequence[int]) -> tuple[State, str]:
    """plangate/destroy of a commit that another open PR with the same head still gates."""
    which = ", ".join(f"#{n}" for n in numbers[:5]) + (" and more" if len(numbers) > 5 else "")
    return "failure", describe(f"{which} at this commit: destroys not approved there — /approve-destroy")
