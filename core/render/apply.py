"""Comments and plangate/apply statuses for apply-on-merge (pure: data in, strings out).

Every body carries a hidden marker (`apply-blocked`, `apply-superseded`, `apply-result`,
`apply-died`, `not-applied`) so a job can find it again, stays under GitHub's 65,536 characters
and is masked like a plan comment (the marker line excepted: it holds the SHA and project name).
A blocked apply names every condemned resource, or says exactly how many did not fit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core.gate import Block
from core.gated import Gated, counts, destroy_key, kind_of
from core.plan import Plan, ResourceChange
from core.render.destroys import action_label, reason_label
from core.render.items import destroy_item
from core.render.marker import marker
from core.render.mask import Masker, fit_masked
from core.render.text import code, code_block, collapsed, diff_lines, one_line, plain_lines

GITHUB_LIMIT = 65_536
ERROR_LINES = 60
PLAN_ROOM = 4_000  # kept for the collapsed plan/output when a destroy list would fill the comment
_SLACK = 64
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_APPLY_COMPLETE = re.compile(r"^Apply complete! Resources: .*$", re.M)
CUT_NOTE = (
    "**{n} more destroys not listed here** (comment size limit). "
    "`plangate gate PLAN.json` on the saved plan lists them all."
)


def _item(key: str, change: ResourceChange | None, m: Masker) -> str:
    if change is None:
        return destroy_item(m(key))
    reason = reason_label(change)
    return f"{destroy_item(m(key))} — {action_label(change)}" + (f" — {m(one_line(reason, 1_000))}" if reason else "")


def _join(sections: Sequence[tuple[str, list[str]]]) -> str:
    return "\n\n".join(title + "\n" + "\n".join(items) for title, items in sections)


def _listing(sections: Sequence[tuple[str, list[str]]], budget: int) -> str:
    """Headed item lists cut to `budget`; when cut, the note says exactly how many items are missing."""
    sections = [(title, items) for title, items in sections if items]
    full = _join(sections)
    if len(full) <= budget:
        return full
    total = sum(len(items) for _, items in sections)
    room = budget - len(CUT_NOTE.format(n=f"{total:,}")) - 2
    kept: list[tuple[str, list[str]]] = []
    used = shown = 0
    for title, items in sections:
        taken: list[str] = []
        cost = len(title) + 2
        for item in items:
            if used + cost + len(item) + 1 > room:
                break
            taken.append(item)
            cost += len(item) + 1
        if taken:
            kept.append((title, taken))
            used, shown = used + cost, shown + len(taken)
        if len(taken) < len(items):
            break
    return "\n\n".join(p for p in [_join(kept), CUT_NOTE.format(n=f"{total - shown:,}")] if p)


def _destroy_sections(
    block: Block, plan: Plan | None, gates: Mapping[str, Gated], m: Masker
) -> list[tuple[str, list[str]]]:
    changes = {destroy_key(c): c for c in reversed(plan.destroys)} if plan is not None else {}
    changes = dict(reversed(changes.items()))  # first change per key, in plan order
    if block.error:
        keys = list(changes) or [k for k in block.unapproved if kind_of(k) == "destroy"]
        return [(f"The plan would destroy {_count(len(keys))}:", [_item(k, changes.get(k), m) for k in keys])]
    unapproved = [_item(k, changes.get(k), m) for k in block.unapproved if kind_of(k) == "destroy"]
    approved = [_item(k, c, m) for k, c in changes.items() if k not in block.unapproved]
    runs = [g for g in gates.values() if g.runs_code]
    open_runs = [f"- {m(one_line(g.what or g.key, 1_000))}" for g in runs if g.key in block.unapproved]
    approved_runs = [f"- {m(one_line(g.what or g.key, 1_000))}" for g in runs if g.key not in block.unapproved]
    open_changes = [f"- {code(m(k), 300)}" for k in block.unapproved if kind_of(k) == "change"]
    open_limits = [
        f"- {m(one_line(gates[k].what if k in gates else k, 300))}" for k in block.unapproved if kind_of(k) == "limit"
    ]
    return [
        (f"Not approved ({len(unapproved):,}):", unapproved),
        (f"Gated changes (change_rules), not approved ({len(open_changes):,}):", open_changes),
        (f"Limits passed (change_limits), not approved ({len(open_limits):,}):", open_limits),
        (f"Runs code at apply, not approved ({len(open_runs):,}):", open_runs),
        (f"Already approved ({len(approved):,}), destroyed too when this applies:", approved),
        (f"Already approved code that runs at apply ({len(approved_runs):,}):", approved_runs),
    ]


def _count(n: int) -> str:
    return f"{n:,} resource" if n == 1 else f"{n:,} resources"


def render_blocked(
    *,
    project: str,
    dir: str,
    sha: str,
    block: Block,
    plan: Plan | None,
    plan_text: str,
    pr: int | None,
    approved_on: str | None,
    mask_patterns: Sequence[str] = (),
    revoked: Sequence[tuple[str, str]] = (),
    gates: Mapping[str, Gated] | None = None,
    voided: Sequence[str] = (),
    authors: str = "",
    limit: int = GITHUB_LIMIT,
    head: str | None = None,
) -> str:
    """The comment (on the merged PR, or on the issue for a direct push) for an apply the gate refused.
    `head`: its first line when not the plain `apply-blocked` marker (the sealed held record).

    `revoked`: approvers whose approval no longer counts, and why (re-checked at apply time); `gates`:
    the plan's gated changes (code that runs at apply is listed under its own heading); `voided`: keys
    approved earlier for another object (or other code) than this plan's; `authors`: who made the change
    and why each counts (workers.adapters.github.authors.Authors.describe)."""
    m = Masker(plan.sensitive_values if plan is not None else (), mask_patterns)
    short = sha[:7]
    where = f" from #{pr}" if pr is not None else ""
    top = [
        f"## ⛔ Apply blocked at {short} (project {code(m(project), 200)})",
        "",
        f"Nothing was applied. Directory {code(m(dir), 200)}, commit `{one_line(sha, 64)}`{where}.",
        "",
    ]
    if block.error:
        top += [
            "> [!CAUTION]",
            "> **This plan cannot be trusted, so it was not applied. No approval will unblock it:**",
            *[f"> - {m(one_line(reason, 2_000))}" for reason in block.reasons],
            "",
        ]
        bottom = [f"Fix the cause and push again, or comment `/plan` here to plan {short} again."]
    else:
        n = counts({k: Gated(k, "") for k in block.unapproved})
        runs = n["code"]
        what = [f"{n['destroy']:,} to destroy"] if n["destroy"] else []
        what += [f"{n['change']:,} gated change{'' if n['change'] == 1 else 's'} (change_rules)"] if n["change"] else []
        what += [f"{n['limit']:,} limit{'' if n['limit'] == 1 else 's'} passed (change_limits)"] if n["limit"] else []
        what += [f"{runs:,} that run{'s' if runs == 1 else ''} code at apply"] if runs else []
        top += ["> [!CAUTION]", f"> **{' and '.join(what)} — not approved.**"]
        if approved_on:
            these = "these destroys" if n["destroy"] == len(block.unapproved) else "these changes"
            top += [f"> The approval given on {one_line(approved_on, 64)[:7]} did not cover {these}."]
        if voided:
            shown = ", ".join(code(m(k)) for k in list(voided)[:10])
            top += [f"> Approved before, but what they destroy (or run) changed since: {shown}."]
        for login, why in revoked:
            top += [f"> @{one_line(login, 100)} no longer qualifies to approve destroys: {m(one_line(why, 1_000))}"]
        if authors:
            top += [f"> Authors of this change, who may not approve it: {m(one_line(authors, 2_000))}."]
        top += [""]
        bottom = [
            f"Comment `/approve-destroy` here to approve exactly these destroys at {short}; "
            "plangate will plan again and apply only if the destroy set is unchanged."
        ]
    sections = _destroy_sections(block, plan, gates or {}, m)
    lines = diff_lines(m(plan_text)) if plan_text.strip() else []
    head = head or marker("apply-blocked", sha=sha, project=project)

    def build(budget: int) -> str:
        fixed = len(head) + sum(len(line) + 1 for line in top + bottom) + _SLACK
        listing = _listing(sections, budget - fixed - (PLAN_ROOM if lines else 0))
        body = "\n".join([*top, *([listing, ""] if listing else []), *bottom])
        plan_part = collapsed("Show plan", lines, "diff", budget - len(head) - len(body) - 8) if lines else ""
        return f"{head}\n{body}\n" + (f"\n{plan_part}\n" if plan_part else "")

    return fit_masked(build, limit, m)


def render_blocked_issue_title(sha: str, project: str) -> str:
    return f"plangate: apply blocked on {sha[:7]} ({one_line(project, 200)})"


def render_superseded(*, project: str, old_sha: str, new_sha: str) -> str:
    """Replaces a blocked comment/issue body once a newer push of the same project took over."""
    return (
        f"{marker('apply-superseded', project=project, old_sha=old_sha, new_sha=new_sha)}\n"
        f"~~Apply blocked at {old_sha[:7]} (project {code(project, 200)})~~\n\n"
        f"Superseded by {new_sha[:7]}: a newer push to this project was planned and gated instead, "
        f"so {old_sha[:7]} will not be applied and `/approve-destroy` here no longer does anything. "
        f"Follow the `plangate/apply` status of {new_sha[:7]}.\n"
    )


def _logins(logins: Sequence[str]) -> str:
    names = [f"@{one_line(login, 100)}" for login in dict.fromkeys(logins)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def render_apply_result(
    *,
    project: str,
    dir: str,
    sha: str,
    ok: bool,
    output: str,
    summary: str,
    approved_by: Sequence[str],
    mask_patterns: Sequence[str] = (),
    secrets: Sequence[str] = (),
    limit: int = GITHUB_LIMIT,
) -> str:
    """The apply's outcome: terraform's own "Apply complete!" line, or the error's last lines."""
    m = Masker(secrets, mask_patterns)
    short, name = sha[:7], code(m(project), 200)
    lines = plain_lines(m(_ANSI.sub("", output)))
    if ok:
        done = _APPLY_COMPLETE.findall(_ANSI.sub("", output))
        said = m(one_line(done[-1] if done else summary, 500))
        top = [f"## ✅ Applied {short} to {name}" + (f": {said}" if said else ".")]
    else:
        top = [f"## ❌ Apply failed at {short} in {name}"]
    top += ["", f"Directory {code(m(dir), 200)}, commit `{one_line(sha, 64)}`."]
    if summary and not ok:
        top += ["", f"The plan was: {m(one_line(summary, 500))}"]
    if approved_by:
        top += ["", f"Destroys approved by {_logins(approved_by)}."]
    head = marker("apply-result", sha=sha, project=project, ok=ok)
    retry = (
        f"plangate does not retry an apply. Check the state, then push a fix or comment `/plan` here "
        f"to plan and apply {short} again."
    )

    def build(budget: int) -> str:
        body = "\n".join(top)
        if not ok:
            tail = lines[-ERROR_LINES:]
            while tail and len(code_block(tail)) > (budget - len(head) - len(body)) // 2:
                tail = tail[len(tail) // 4 + 1 :]
            note = f"Last {len(tail)} of {len(lines)} lines:" if len(tail) < len(lines) else "Output:"
            body = "\n\n".join([body, note, code_block(tail), retry])
        rest = budget - len(head) - len(body) - 8
        details = collapsed("Show apply output", lines, "", rest) if lines and rest > 200 else ""
        return f"{head}\n{body}\n" + (f"\n{details}\n" if details else "")

    return fit_masked(build, limit, m)


def render_apply_died(*, project: str, sha: str) -> str:
    """The job died mid-apply (no result came back): the state may be partly applied or still locked."""
    short = sha[:7]
    return (
        f"{marker('apply-died', sha=sha, project=project)}\n"
        f"## ⚠️ Apply of {short} in {code(project, 200)} died before it finished\n\n"
        "> [!WARNING]\n"
        "> The apply job stopped without a result (worker killed, timed out or lost), so `plangate/apply` "
        "is `error`. Some changes may already be applied: check the state before anything else.\n"
        "> The state lock may still be held: `terraform force-unlock LOCK_ID` (`tofu force-unlock`) "
        "releases it once you are sure no apply is running.\n\n"
        f"Comment `/plan` here to run plan → gate → apply again for {short}.\n"
    )


def render_not_applied(*, project: str, sha: str, summary: str, reason: str) -> str:
    """A project plangate planned but did not apply: `apply_on_merge: false`, or nothing to apply (Noop)."""
    said = f" {one_line(summary, 500)}" if summary else ""
    return (
        f"{marker('not-applied', sha=sha, project=project)}\n"
        f"Not applied at {sha[:7]} (project {code(project, 200)}): {one_line(reason, 1_000)}.{said}\n"
    )


def render_waiting(*, project: str, sha: str, holdup: str, dependency: str) -> str:
    """A project not planned nor applied because a project it depends on did not apply (core.apply_order):
    `holdup` is "waiting on NAME (failed)"; the same fix that applies NAME applies this one after it."""
    return (
        f"{marker('apply-waiting', sha=sha, project=project)}\n"
        f"Not applied at {sha[:7]} (project {code(project, 200)}): {one_line(holdup, 1_000)}. "
        f"It is planned and applied once {code(dependency, 200)} applies.\n"
    )
