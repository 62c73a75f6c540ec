"""Change rules and limits (pure): which creates, updates and reads a plan gates, and when a PR's plan
is past a limit.

```yaml
change_rules:                                   # destroy_rules for any action
  - match: ["type:terraform_data", "module.prod.*"]
    actions: [update, create]                   # delete|replace|create|update|read; default [delete, replace]
    approvals: 2
    approvers: {teams: [acme/sre]}
change_limits:                                  # a PR's plan past a limit is gated until approved
  max_destroys: 5                               # destroys across every project of the plan
  max_projects: 3                               # projects with changes
  approvals: 2                                  # default 1
  approvers: {users: [alice]}                   # default: whoever may approve destroys
```

A create, update or read is gated only when a change rule names its action and matches it (by every
name it has, like a destroy rule: core.destroy_rules). A replacement counts as a create and an update
too (core.destroy_rules.COUNTS_AS), so a forced replacement cannot dodge an update rule. Destroys are
always gated, whatever the rules say; a change rule naming delete or replace adds to what a destroy
needs, like a destroy rule.

A limit is gated in each project that counts towards it, bound to what that project contributed (its
destroys with their objects, or the project itself): an approval stands while those stay the same, and
a project that joins the count brings a limit of its own to approve. A plan is judged as a whole where
every project of it is seen (the PR's plan, an approval, the button, a merge group). A merge-time apply
sees one project: there a limit is gated when that project alone is past it, or when the merged PR's
published plan gated it in that project (its record in Redis; without one, or with a project whose plan
failed there, every limit the project counts towards is gated: fails closed). A direct push is judged
by the number of projects it affects (workers.flows.apply_decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from core.config import ChangeLimits, Rule
from core.destroy_rules import matches
from core.gated import CHANGE_ACTIONS, LIMIT_PREFIX, Gated, change_key, plan_gates
from core.plan import CodeRun, Plan
from core.plan_json import digest

MAX_DESTROYS = f"{LIMIT_PREFIX}max_destroys"
MAX_PROJECTS = f"{LIMIT_PREFIX}max_projects"
LIMIT_KEYS = (MAX_DESTROYS, MAX_PROJECTS)


def change_gates(plan: Plan, rules: Sequence[Rule]) -> dict[str, Gated]:
    """The creates, updates and reads of one project's plan that a change rule gates, in plan order."""
    gates: dict[str, Gated] = {}
    for change in plan.changes:
        if change.is_destroy or change.rule_action not in CHANGE_ACTIONS:
            continue
        previous = change.previous_address if change.is_moved else None
        action = "forget-replace" if change.rule_action != change.action_class else change.action_class
        gated = Gated(change_key(change), change.change_digest, previous, action=action)
        if any(matches(rule, gated) for rule in rules):
            gates.setdefault(gated.key, gated)
    return gates


def with_limits(
    gates: Mapping[str, Mapping[str, Gated]], changed: Iterable[str], limits: ChangeLimits | None
) -> dict[str, dict[str, Gated]]:
    """`gates` (project identity → its gated changes) with a limit gated in every project that counts
    towards a limit the plan is past. `changed`: the projects whose plan has changes."""
    out = {project: dict(keys) for project, keys in gates.items()}
    if limits is None:
        return out
    total = sum(len(_destroys(keys)) for keys in out.values())
    if limits.max_destroys is not None and total > limits.max_destroys:
        spread = sum(1 for keys in out.values() if _destroys(keys))
        what = f"{total} to destroy in {spread} {_noun(spread, 'project')}, over max_destroys: {limits.max_destroys}"
        for project, keys in out.items():
            found = limit_gate(MAX_DESTROYS, limits, project, keys, what)
            out[project].update({found.key: found} if found else {})
    projects = sorted(p for p in dict.fromkeys(changed) if p in out)
    if limits.max_projects is not None and len(projects) > limits.max_projects:
        what = f"{len(projects)} projects with changes, over max_projects: {limits.max_projects}"
        for project in projects:
            found = limit_gate(MAX_PROJECTS, limits, project, out[project], what)
            out[project].update({found.key: found} if found else {})
    return out


def limit_gate(key: str, limits: ChangeLimits, project: str, gates: Mapping[str, Gated], what: str) -> Gated | None:
    """The limit `key` gated in `project`, bound to what the project counts towards it (its destroys with
    their objects; for max_projects, the project): None when it counts nothing towards max_destroys.
    Whether the plan is past the limit is the caller's judgement (`with_limits`, or the PR's record)."""
    if key == MAX_DESTROYS:
        counted = _destroys(gates)
        if not counted or limits.max_destroys is None:
            return None
        return Gated(key, digest(["max_destroys", limits.max_destroys, project, counted]), what=what)
    if key == MAX_PROJECTS and limits.max_projects is not None:
        return Gated(key, digest(["max_projects", limits.max_projects, project]), what=what)
    return None


def _destroys(gates: Mapping[str, Gated]) -> list[tuple[str, str]]:
    return sorted((k, g.object) for k, g in gates.items() if g.kind == "destroy")


def _noun(n: int, word: str) -> str:
    return word if n == 1 else f"{word}s"


def project_gates(
    plan: Plan, code_runs: Iterable[CodeRun] = (), *, gate_code: bool = True, rules: Sequence[Rule] = ()
) -> dict[str, Gated]:
    """Every gated change of one project's plan: its destroys and the code it would run at apply
    (core.gated.plan_gates), then the changes `rules` gate. Limits need the other projects: `with_limits`."""
    return {**plan_gates(plan, code_runs, gate_code=gate_code), **change_gates(plan, rules)}
