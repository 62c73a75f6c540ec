"""The destroy, code-at-apply and drift sections of a plan comment (pure).

Addresses are quoted exactly as terraform prints them. When the list cannot fit the comment,
it is cut and the note says exactly how many were left out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from core.gated import Gates, destroy_key
from core.plan import ResourceChange
from core.projects import identity_label
from core.render.text import code, fit_items, one_line
from core.results import ProjectResult

REASONS = {
    "delete_because_no_resource_config": "no longer in configuration",
    "delete_because_no_module": "its module is no longer in configuration",
    "delete_because_wrong_repetition": "count/for_each was added or removed",
    "delete_because_count_index": "count index out of range",
    "delete_because_each_key": "for_each key no longer present",
    "delete_because_no_move_target": "moved to an address that does not exist",
    "delete_because_enabled_false": "enabled = false",
    "replace_because_tainted": "tainted",
    "replace_because_cannot_update": "an attribute cannot be updated in place",
    "replace_by_request": "replacement requested with -replace",
    "replace_by_triggers": "replace triggered by replace_triggered_by",
}

CUT_NOTE = (
    "> **{n} more destroys not listed here** (comment size limit). The full list is in the plan "
    "output (`terraform show` of the saved plan) and in `plangate gate PLAN.json`."
)

Mask = Callable[[str], str]
Notes = Mapping[tuple[str, str], str]  # (project identity, destroy key) → what a destroy rule says


def action_label(change: ResourceChange) -> str:
    """delete / replace (with order) / deposed delete / unknown, in words."""
    if change.action_class == "replace":
        first = "destroy, then create" if change.actions[:1] == ("delete",) else "create, then destroy"
        return f"replace ({first})"
    if change.action_class == "delete":
        return "delete deposed object" if change.deposed else "delete"
    return f"unknown action {', '.join(change.actions)} (treated as a destroy)"


def reason_label(change: ResourceChange) -> str:
    """action_reason in words; replace_paths named; an unknown reason shown as given."""
    if change.reason is None:
        text = "left over from a failed create_before_destroy" if change.deposed else ""
    else:
        text = REASONS.get(change.reason, change.reason.replace("_", " "))
    if change.replace_paths:
        text = f"{text}: {', '.join(change.replace_paths)}" if text else ", ".join(change.replace_paths)
    return text


def _project_lines(result: ProjectResult, mask: Mask, notes: Notes) -> list[tuple[str, bool]]:
    """(line, is_address) pairs for one project's destroys, grouped by action and reason; `notes`: what
    a destroy rule says about one (which rule, what it still needs)."""
    assert result.plan is not None
    destroys = result.plan.destroys
    groups: dict[tuple[str, str], list[ResourceChange]] = {}
    for change in destroys:
        groups.setdefault((action_label(change), reason_label(change)), []).append(change)
    noun = "destroy" if len(destroys) == 1 else "destroys"
    head = f"> **{code(mask(result.dir))}** · workspace {code(mask(result.workspace))}"
    lines = [(">", False), (f"{head} — {len(destroys):,} {noun}:", False)]
    for (action, reason), changes in groups.items():
        why = f" — {mask(one_line(reason))}" if reason else ""
        lines.append((f"> *{action}{why}* ({len(changes):,}):", False))
        for change in changes:
            deposed = f" (deposed object {code(mask(change.deposed))})" if change.deposed else ""
            note = notes.get((result.identity, destroy_key(change)))
            rule = f" · *{one_line(note, 200)}*" if note else ""
            lines.append((f"> - {code(mask(change.address))}{deposed}{rule}", True))
    return lines


def destroy_section(results: Sequence[ProjectResult], mask: Mask, budget: int, notes: Notes | None = None) -> str:
    """A CAUTION alert listing every destroy, or as many as fit `budget` plus an exact cut count."""
    condemned = [r for r in results if r.plan is not None and r.plan.destroys]
    if not condemned:
        return ""
    total = sum(len(r.plan.destroys) for r in condemned if r.plan is not None)
    noun = "resource" if total == 1 else "resources"
    where = "1 project" if len(condemned) == 1 else f"{len(condemned)} projects"
    top = [
        "> [!CAUTION]",
        f"> **{total:,} {noun} will be destroyed** ({where}). "
        "Nothing is destroyed until someone with permission comments `/approve-destroy`.",
    ]
    bottom = [
        ">",
        "> Comment `/approve-destroy` to approve these destroys (`/approve-destroy PROJECT` for one "
        "project). A new push needs a new approval.",
    ]
    items = [pair for r in condemned for pair in _project_lines(r, mask, notes or {})]
    room = budget - sum(len(line) + 1 for line in top + bottom)
    if sum(len(line) + 1 for line, _ in items) > room:
        room -= len(CUT_NOTE.format(n=f"{total:,}")) + 1
        kept: list[tuple[str, bool]] = []
        used = 0
        for pair in items:
            if used + len(pair[0]) + 1 > room:
                break
            kept.append(pair)
            used += len(pair[0]) + 1
        while kept and not kept[-1][1]:
            kept.pop()  # no header without a listed address under it
        cut = total - sum(1 for _, is_address in kept if is_address)
        items = [*kept, (CUT_NOTE.format(n=f"{cut:,}"), False)]
    return "\n".join(top + [line for line, _ in items] + bottom)


def drift_lines(result: ProjectResult, mask: Mask) -> list[str]:
    """One line per resource changed outside Terraform (`resource_drift`), for reviewers only."""
    if result.plan is None:
        return []
    words = {"delete": "deleted", "update": "changed", "create": "created", "replace": "replaced"}
    return [
        f"- {code(mask(c.address))} — {words.get(c.action_class, ', '.join(c.actions))} outside Terraform"
        for c in result.plan.drift
    ]


def code_section(gates: Gates, mask: Mask, budget: int) -> str:
    """A CAUTION alert listing the code an apply would run (provisioners, programs, providers from the
    repository): gated like destroys, under its own heading."""
    runs = [(identity, g) for identity, gated in gates.items() for g in gated.values() if g.runs_code]
    if not runs:
        return ""
    several = len({identity for identity, _ in runs}) > 1
    top = [
        "> [!CAUTION]",
        f"> **Runs code at apply** ({len(runs):,}): merging would run this with the apply's credentials, beyond "
        "the planned changes. It needs `/approve-destroy`, like a destroy.",
    ]
    items = [
        f"> - {mask(one_line(g.what or g.key, 300))}"
        + (f" · {code(mask(identity_label(identity)), 200)}" if several else "")
        for identity, g in runs
    ]
    kept, _ = fit_items(items, budget - sum(len(line) + 1 for line in top), "> - … and {n} more")
    return "\n".join([*top, *kept])


def voided_note(voided: Collection[tuple[str, str]]) -> str:
    """Approvals given earlier that no longer cover a change: what it destroys (or runs) is another thing now."""
    if not voided:
        return ""
    keys = sorted({key for _, key in voided})
    shown = ", ".join(code(k, 200) for k in keys[:10]) + (f" and {len(keys) - 10:,} more" if len(keys) > 10 else "")
    return (
        "> [!WARNING]\n> An earlier approval no longer covers "
        f"{shown}: the object it destroys (or the code it runs) changed since that approval. Look again and approve."
    )


_LIMIT_NAMES = {"change": "Gated changes (change_rules)", "limit": "Limits passed (change_limits)"}


def changes_section(gates: Gates, mask: Mask, budget: int, notes: Notes | None = None) -> str:
    """A CAUTION alert listing the creates, updates and reads the default branch's change rules gate, and
    the limits the plan is past: each with the rule and what it still needs. Gated like destroys."""
    several = len(gates) > 1
    lines: dict[str, list[str]] = {"change": [], "limit": []}
    for identity, gated in gates.items():
        for g in gated.values():
            if g.kind not in lines:
                continue
            note = (notes or {}).get((identity, g.key))
            text = code(mask(g.key), 300) if g.kind == "change" else mask(one_line(g.what or g.key, 300))
            where = f" · {code(mask(identity_label(identity)), 200)}" if several else ""
            lines[g.kind].append(f"> - {text}{where}" + (f" · *{one_line(note, 200)}*" if note else ""))
    if not any(lines.values()):
        return ""
    top = [
        "> [!CAUTION]",
        "> **Gated by the default branch's rules**: nothing here is applied until `/approve-destroy`.",
    ]
    items: list[str] = []
    for kind, found in lines.items():
        items += [f"> **{_LIMIT_NAMES[kind]}** ({len(found):,}):", *found] if found else []
    kept, _ = fit_items(items, budget - sum(len(line) + 1 for line in top), "> - … and {n} more")
    return "\n".join([*top, *kept])
