"""`plangate/apply`: one state and description for every project a pushed SHA applies (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.apply_outcome import ApplyOutcome, Ending
from core.render.status import State, describe
from core.render.text import one_line


def apply_pending(n_projects: int) -> tuple[State, str]:
    noun = "project" if n_projects == 1 else "projects"
    return "pending", describe(f"Planning and applying {n_projects} {noun}…")


def _names(names: Sequence[str], room: int) -> str:
    """Project names within `room` characters, then "+N more", so a suffix survives the 140 clip."""
    shown: list[str] = []
    for name in names:
        candidate = [*shown, one_line(name, 40)]
        left = len(names) - len(candidate)
        if shown and len(", ".join(candidate)) + len(f" +{left} more" if left else "") > room:
            break
        shown = candidate
    left = len(names) - len(shown)
    return ", ".join(shown) + (f" +{left} more" if left else "")


def apply_status(
    outcomes: Mapping[str, ApplyOutcome], still_failed: Sequence[tuple[str, int]] = ()
) -> tuple[State, str]:
    """One plangate/apply (state, description) for all projects of the pushed SHA; worst outcome wins.
    `still_failed`: (project, issue) of each project this SHA did not apply whose last apply on the branch
    failed: the branch is not in step with reality until an apply of it succeeds."""
    by: dict[Ending, list[str]] = {}
    destroys = sum(outcome.destroys for outcome in outcomes.values())
    for project, outcome in outcomes.items():
        by.setdefault(outcome.ending, []).append(project)
    if Ending.ERROR in by:
        return "error", describe(f"apply died in {_names(by[Ending.ERROR], 90)} — check the state")
    if Ending.LOST in by:
        return "error", describe(f"apply lost before it started in {_names(by[Ending.LOST], 70)} — /plan runs it again")
    if Ending.FAILED in by:
        return "failure", describe(f"apply failed in {_names(by[Ending.FAILED], 110)}")
    if Ending.UNTRUSTED in by:
        also = f"; {destroys:,} to destroy" if destroys else ""
        return "failure", describe(f"blocked: plan cannot be trusted in {_names(by[Ending.UNTRUSTED], 80)}{also}")
    if Ending.BLOCKED in by:
        return "failure", describe(
            f"blocked: {destroys:,} gated change{'s' if destroys != 1 else ''} — /approve-destroy"
        )
    if Ending.WAITING in by:
        return "failure", describe(f"waiting on a dependency: {_names(by[Ending.WAITING], 100)}")
    if still_failed:
        return "failure", still_failed_status(still_failed)[1]
    applied, skipped = len(by.get(Ending.APPLIED, [])), len(by.get(Ending.NOT_APPLIED, []))
    parts = [f"applied {applied} project{'s' if applied != 1 else ''}"] if applied else []
    parts += [f"{skipped} not applied (apply_on_merge: false)"] if skipped else []
    later = len(by.get(Ending.SUPERSEDED, []))
    parts += [f"{later} left to a newer push's held apply"] if later else []
    return "success", describe("; ".join(parts) or "nothing to apply")


def still_failed_status(still_failed: Sequence[tuple[str, int]]) -> tuple[State, str]:
    """A push that applied nothing of a project whose last apply failed: red until one succeeds."""
    issues = ", ".join(f"#{number}" for _, number in still_failed[:5])
    return "failure", describe(f"last apply failed in {_names([n for n, _ in still_failed], 70)} — see {issues}")
