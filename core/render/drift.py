"""Drift issue bodies and comments (pure: data in, strings out).

One open issue per project, labelled `DRIFT_LABEL` and titled `drift_issue_title(project)`, is
edited in place on every check that finds drift (`render_drift_report`), told when a check could
not run (`render_drift_failed`) and closed with `render_drift_resolved`. Each body carries a
hidden marker (`drift`, `drift-check-failed`, `drift-resolved`) with the project and SHA, is
masked like a plan comment (the marker line excepted) and stays under GitHub's 65,536 characters;
a list that does not fit says exactly how many entries it left out. Each resource changed outside
Terraform lists its changed attributes, before → after (`drift_item`, core/drift_diff.py), and so
does each update a plan would make (state → code).

What counts as drift (`has_drift`): a resource changed outside Terraform (`resource_drift`,
except no-op entries, which only record a move), or any change a plan would make to a resource:
create, update, delete, replace, unknown, `forget` (the state would drop an object: state and
code disagree), an unapplied `moved` block or an import. Data-source reads are not drift, and
neither are output changes alone: outputs hold no infrastructure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from core.drift_diff import VALUE_LIMIT, cut
from core.plan import Plan, ResourceChange, summary_line
from core.render.destroys import action_label, reason_label
from core.render.marker import marker
from core.render.mask import Masker, fit_masked
from core.render.text import (
    code,
    code_block,
    collapsed,
    diff_lines,
    fit_items,
    one_line,
    plain_lines,
)

DRIFT_LABEL = "plangate:drift"
GITHUB_LIMIT = 65_536
ERROR_LINES = 60
PLAN_ROOM = 4_000  # kept for the collapsed plan when the lists would fill the body
_SLACK = 64
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MORE = "- _… and {n} more not listed here (comment size limit)_"
ATTRIBUTES_SHOWN = 20  # changed attributes listed per drifted resource
NEVER_APPLIES = "plangate never applies on a schedule; merge a fix or apply by hand."
_OUTSIDE = {"delete": "deleted", "update": "updated", "create": "created", "replace": "replaced"}


def drift_issue_title(project: str) -> str:
    return f"Drift in {one_line(project, 200)}"


def _when(at: datetime) -> str:
    """UTC ISO 8601 to the second; a naive datetime is taken to be UTC already."""
    aware = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return aware.strftime("%Y-%m-%dT%H:%M:%SZ")


def _drifted(plan: Plan) -> list[ResourceChange]:
    return [c for c in plan.drift if c.action_class != "no-op"]


def _planned(change: ResourceChange) -> bool:
    """A non-destroy change an apply would make (data reads and plain no-ops excluded)."""
    if change.is_destroy or change.action_class == "read":
        return False
    return change.action_class != "no-op" or change.is_moved or change.importing


def has_drift(plan: Plan) -> bool:
    """Real infrastructure and code disagree (see the module docstring for what counts)."""
    return bool(_drifted(plan)) or any(c.is_destroy or _planned(c) for c in plan.changes)


def drifted(plan: Plan) -> list[ResourceChange]:
    """The resources changed outside Terraform (moves alone are not drift)."""
    return _drifted(plan)


def drift_item(change: ResourceChange, m: Masker) -> str:
    """One drifted resource, then one line per changed attribute, before → after (at most
    `ATTRIBUTES_SHOWN`, and how many more): values as core/drift_diff.py shows them, masked by `m`."""
    what = _OUTSIDE.get(change.action_class, ", ".join(change.actions))
    deposed = f" (deposed object {code(change.deposed)})" if change.deposed else ""
    return "\n".join([f"- {code(change.address)}{deposed} — {what} outside Terraform", *_attribute_lines(change, m)])


def _destroy_item(change: ResourceChange) -> str:
    reason = reason_label(change)
    deposed = f" (deposed object {code(change.deposed)})" if change.deposed else ""
    why = f" — {one_line(reason, 1_000)}" if reason else ""
    return f"- {code(change.address)}{deposed} — {action_label(change)}{why}"


def _change_words(change: ResourceChange) -> str:
    words = {"create": "create", "update": "update in place"}
    if change.action_class == "forget":
        parts = [
            "forget the old object (kept, removed from state), create a new one"
            if "create" in change.actions
            else "forget (removed from state, object kept)"
        ]
    elif change.action_class in words:
        parts = [words[change.action_class]]
    else:
        parts = []
    if change.is_moved and change.previous_address:
        parts.append(f"moved from {code(change.previous_address)}")
    if change.importing:
        parts.append("import")
    if change.reason:
        parts.append(one_line(reason_label(change), 1_000))
    return "; ".join(parts)


def _change_item(change: ResourceChange, m: Masker) -> str:
    return "\n".join([f"- {code(change.address)} — {_change_words(change)}", *_attribute_lines(change, m)])


def _attribute_lines(change: ResourceChange, m: Masker) -> list[str]:
    """One line per changed attribute, before → after (at most `ATTRIBUTES_SHOWN`, then how many more).
    Each value is masked whole, then cut: a secret the cut split would no longer be recognised."""
    shown = change.attributes[:ATTRIBUTES_SHOWN]
    lines = [
        f"  - {code(a.path, 300)}: {code(cut(m(a.before), VALUE_LIMIT))} → {code(cut(m(a.after), VALUE_LIMIT))}"
        for a in shown
    ]
    if len(change.attributes) > len(shown):
        lines.append(f"  - _… and {len(change.attributes) - len(shown):,} more attributes_")
    return lines


def _share(needs: Sequence[int], budget: int) -> list[int]:
    """Split `budget` across sections: each gets what it needs, up to an equal share of what is left."""
    out = [0] * len(needs)
    left, order = max(budget, 0), sorted(range(len(needs)), key=lambda i: needs[i])
    for rank, i in enumerate(order):
        out[i] = min(needs[i], left // (len(needs) - rank))
        left -= out[i]
    return out


def _sections(titled: Sequence[tuple[str, list[str]]], budget: int) -> list[str]:
    """Each (title, items) with its items cut to a fair share of `budget`, exact counts kept."""
    present = [(title, items) for title, items in titled if items]
    needs = [sum(len(i) + 1 for i in items) for _, items in present]
    rooms = _share(needs, budget - sum(len(title) + 2 for title, _ in present))
    fitted = [fit_items(items, room, MORE)[0] for (_, items), room in zip(present, rooms, strict=True)]
    return [title + "\n" + "\n".join(kept) for (title, _), kept in zip(present, fitted, strict=True)]


def render_drift_report(
    *,
    project: str,
    dir: str,
    sha: str,
    checked_at: datetime,
    plan: Plan,
    plan_text: str,
    mask_patterns: Sequence[str] = (),
    limit: int = GITHUB_LIMIT,
) -> str:
    """The drift issue's body: what changed outside Terraform and what a plan would do about it."""
    m = Masker(plan.sensitive_values, mask_patterns)
    short, when = sha[:7], _when(checked_at)
    drifted = _drifted(plan)
    destroys = list(plan.destroys)
    others = [c for c in plan.changes if _planned(c)]
    top = [
        f"## ⚠️ Drift in {code(project, 200)} at {short} ({when})",
        "",
        f"The scheduled check of directory {code(dir, 200)} at commit `{one_line(sha, 64)}` found that "
        "the real infrastructure no longer matches the code.",
        "",
        f"**{summary_line(plan)}**",
        "",
    ]
    would = "### What a plan would do now\n\n"
    sections = [
        (f"### Changed outside Terraform ({len(drifted):,})", [drift_item(c, m) for c in drifted]),
        (f"{would}**Destroy ({len(destroys):,}), listed first:**", [_destroy_item(c) for c in destroys]),
        (f"{'' if destroys else would}**Create or change ({len(others):,}):**", [_change_item(c, m) for c in others]),
    ]
    if not destroys and not others:
        top += [would + "Nothing: the code already describes the infrastructure as it is now.", ""]
    bottom = [
        "> [!NOTE]",
        f"> {NEVER_APPLIES}",
        "",
        "Comment `/plan` in this issue to run the check again. This issue is updated on every check "
        "and closed when a check finds no drift.",
        *(
            [
                "",
                "Comment `/accept-drift` to record what changed outside Terraform as the new state "
                "(`apply -refresh-only`: no infrastructure is changed); it takes the right to approve destroys.",
            ]
            if drifted
            else []
        ),
    ]
    lines = diff_lines(m(plan_text)) if plan_text.strip() else []
    head = marker("drift", project=project, sha=sha)

    def build(budget: int) -> str:
        fixed = len(head) + sum(len(line) + 1 for line in top + bottom) + _SLACK
        listing = _sections(sections, budget - fixed - (PLAN_ROOM if lines else 0))
        body = "\n".join([*top, *[part + "\n" for part in listing], *bottom])
        plan_part = collapsed("Show plan", lines, "diff", budget - len(head) - len(body) - 8) if lines else ""
        return f"{head}\n{body}\n" + (f"\n{plan_part}\n" if plan_part else "")

    return fit_masked(build, limit, m)


def render_drift_failed(
    *,
    project: str,
    sha: str,
    checked_at: datetime,
    error: str,
    mask_patterns: Sequence[str] = (),
    secrets: Sequence[str] = (),
    limit: int = GITHUB_LIMIT,
) -> str:
    """A check that could not finish (init/plan error): says so, and that drift is unknown, not absent."""
    m = Masker(secrets, mask_patterns)
    short, when = sha[:7], _when(checked_at)
    lines = plain_lines(m(_ANSI.sub("", error)))
    top = [
        f"## ❓ Drift check failed in {code(project, 200)} at {short} ({when})",
        "",
        "> [!WARNING]",
        "> The scheduled check could not finish, so **the drift status is unknown**: this is not a "
        "report of drift, nor of its absence.",
        "",
        f"Commit `{one_line(sha, 64)}`.",
    ]
    bottom = f"Fix the cause, or comment `/plan` in this issue to run the check again. {NEVER_APPLIES}"
    head = marker("drift-check-failed", project=project, sha=sha)

    def build(budget: int) -> str:
        body = "\n".join(top)
        tail = lines[-ERROR_LINES:]
        while tail and len(code_block(tail)) > (budget - len(head) - len(body) - len(bottom) - _SLACK):
            tail = tail[len(tail) // 4 + 1 :]
        note = f"Last {len(tail)} of {len(lines)} lines of output:" if len(tail) < len(lines) else "Output:"
        return f"{head}\n" + "\n\n".join([body, note, code_block(tail), bottom]) + "\n"

    return fit_masked(build, limit, m)


def render_drift_resolved(*, project: str, sha: str, checked_at: datetime) -> str:
    """The closing comment when a later check finds the code and the infrastructure agree again."""
    return (
        f"{marker('drift-resolved', project=project, sha=sha)}\n"
        f"No drift at {sha[:7]} ({_when(checked_at)}): closing. "
        f"The infrastructure of {code(project, 200)} matches the code again.\n"
    )
