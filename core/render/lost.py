"""The last word on a run plangate could not finish (pure: data in, strings out).

A job that fails for good (its worker killed on every try, GitHub unreachable for the whole outage
window, or an error of plangate's own) must still leave the PR with terminal reports and one comment
saying what was lost and how to run it again: nobody should be left looking at a pending check.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.render.marker import marker
from core.render.replies import reply_marker
from core.render.status import State, describe
from core.render.text import code, one_line

KILLED = "killed"  # the work horse was stopped (OOM kill, node loss) on every try
OUTAGE = "outage"  # GitHub could not be reached for the whole outage window


def why_text(why: str, *, outage_seconds: float) -> str:
    """`why` (KILLED, OUTAGE, or an error's name) as the end of a sentence."""
    if why == KILLED:
        return "the worker running it was stopped on every try (out of memory, or its machine went away)"
    if why == OUTAGE:
        took = f"{outage_seconds / 60:.0f} minutes" if outage_seconds >= 120 else f"{outage_seconds:.0f} seconds"
        return f"GitHub could not be reached for {took}"
    return f"it failed inside plangate ({one_line(why, 200)})"


def lost_plan_statuses(why_said: str) -> list[tuple[str, State, str]]:
    """plangate/plan and plangate/destroy for a PR whose plan was lost: an error, never a verdict."""
    return [
        ("plangate/plan", "error", describe(f"Plan lost: {why_said}. Comment /plan to run it again")),
        ("plangate/destroy", "error", describe("No verdict: the plan was lost. Comment /plan to run it again")),
    ]


def render_plan_lost(*, pr: int, sha: str, why_said: str) -> str:
    """The PR's plan comment (part 1 of 1) when its plan of `sha` could not be finished."""
    return (
        f"{marker('plan', parts=1, part=1, pr=pr, sha=sha, lost=True)}\n"
        f"## ⚠️ plangate could not finish the plan of {sha[:7]}\n\n"
        f"The plan was lost: {why_said}. Nothing was applied, and `plangate/destroy` gives no verdict "
        "until a plan of this commit is published.\n\n"
        "Comment `/plan` to run it again.\n"
    )


def render_apply_lost(*, sha: str, why_said: str, projects: Sequence[str] = ()) -> str:
    """The merged PR's comment when the apply of `sha` could not be finished before terraform applied
    anything (found nothing to do, or never started)."""
    which = f" ({', '.join(code(p, 200) for p in projects)})" if projects else ""
    return (
        f"{marker('apply-lost', sha=sha)}\n"
        f"## ⚠️ plangate could not finish the apply of {sha[:7]}{which}\n\n"
        f"{why_said[:1].upper()}{why_said[1:]}. Nothing was applied: `terraform apply` never started.\n\n"
        f"Comment `/plan` here to run plan → gate → apply again for {sha[:7]}.\n"
    )


def render_apply_unknown(*, sha: str, why_said: str) -> str:
    """The merged PR's comment when the apply of `sha` lost its records mid-way: whether `terraform
    apply` ran is unknown."""
    return (
        f"{marker('apply-lost', sha=sha)}\n"
        f"## ⚠️ plangate lost track of the apply of {sha[:7]}\n\n"
        f"{why_said[:1].upper()}{why_said[1:]}, so whether `terraform apply` ran is unknown: check the state "
        "before anything else.\n\n"
        f"Comment `/plan` here to run plan → gate → apply again for {sha[:7]}.\n"
    )


def apply_lost_status(why_said: str) -> tuple[State, str]:
    return "error", describe(f"Apply lost before it started: {why_said}. /plan on the PR runs it again")


def apply_unknown_status(why_said: str) -> tuple[State, str]:
    """No project's outcome survived (Redis lost them): whether anything was applied is unknown."""
    return "error", describe(f"Apply outcome unknown: {why_said} — check the state")


def render_command_lost(*, command: str | None, reply_to: int | None, why_said: str) -> str:
    """The reply to a command plangate could not finish: nothing it would have done was done."""
    name = command or "help"
    return (
        f"{reply_marker(name, 'lost', reply_to)}\n"
        f"/{name}: plangate could not finish this command: {why_said}. Nothing changed; comment it again.\n"
    )
