"""May this saved plan be applied to accept drift? (pure: `/accept-drift`'s last check before `apply`).

`/accept-drift` runs `terraform plan -refresh-only -out=…` and applies that saved plan: the state
takes on what the refresh read, and no infrastructure is touched. The plan file's JSON carries no
mode flag, so what is checked is what applying it would do: no resource action at all (terraform
writes none for a refresh-only plan; a no-op entry changes nothing either), no move (in the resource
changes, or among the drift, where a refresh-only plan lists a `moved` block's), no import, no code
that an apply would run, nothing terraform's own plan marked as errored or incomplete, and no action
this code does not know. Anything else is refused, whoever asked: a plan that would create,
change or destroy is never applied through this command (that is what a merge, through the gate, is
for). Output changes are allowed: outputs live in the state alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.plan import CodeRun, Plan


def refresh_only_refusal(plan: Plan, code_runs: Sequence[CodeRun] = ()) -> str | None:
    """Why this plan must not be applied as `/accept-drift`'s refresh-only apply; None when it may be."""
    if plan.errored:
        return "terraform marked the refresh-only plan as errored"
    if plan.complete is False:
        return "the refresh-only plan is incomplete (terraform deferred part of it)"
    if plan.unknown_actions:
        return f"the plan holds actions plangate does not know ({', '.join(plan.unknown_actions)})"
    acting = [c for c in plan.changes if c.action_class != "no-op" or c.is_moved or c.importing]
    if acting:
        first = acting[0]
        what = ", ".join(first.actions)
        return (
            f"the plan would act on resources ({len(acting):,}, first `{first.address}`: {what}); "
            "a refresh-only plan changes none, so it is not applied"
        )
    # A refresh-only plan lists a `moved` block's move in `resource_drift` alone (terraform writes no
    # resource_changes for it), and applying the plan records the move in the state: refused too.
    moves = [c for c in plan.drift if c.is_moved]
    if moves:
        first = moves[0]
        return (
            f"the plan would move objects in the state ({len(moves):,}, first `{first.previous_address}` to "
            f"`{first.address}`); a move is applied by a merge, through the gate, not by accepting drift"
        )
    if code_runs:
        return f"applying it would run code ({code_runs[0].what}); accept drift only where no such code runs"
    return None
