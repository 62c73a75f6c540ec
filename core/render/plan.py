"""PR comments and status descriptions for plans (pure: data in, strings out).

A plan comment must never be rejected by GitHub (422 above 65,536 characters), must keep the
headlines and the destroy list in its first part, and must never leak a sensitive value.
Plan output that does not fit is shortened (head and tail kept) or continued in follow-up
comments, each carrying a `plangate:plan` marker with its part number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from core.gated import Gates
from core.project_limit import TooMany
from core.render.destroys import Notes, changes_section, code_section, destroy_section, drift_lines, voided_note
from core.render.marker import marker, parse_marker
from core.render.mask import MASK, Masker, mask
from core.render.run_links import run_link
from core.render.status import destroy_status, failed, pending_status, plan_status
from core.render.text import (
    clip,
    code,
    code_block,
    diff_lines,
    fence_for,
    fit_items,
    head_tail,
    one_line,
    plain_lines,
)
from core.results import ProjectResult

__all__ = [
    "MASK",
    "ProjectResult",
    "destroy_status",
    "marker",
    "mask",
    "parse_marker",
    "pending_status",
    "plan_status",
    "render_config_error",
    "render_fork_refused",
    "render_plan_comments",
    "render_too_many_files",
]

GITHUB_LIMIT = 65_536
MIN_LIMIT = 4_096
ERROR_LINES = 40
MIN_ROOM = 2_000  # below this, a shortened plan goes to a fresh comment rather than a sliver


Block = Callable[[int | None], str]  # budget (None: unshortened) -> markdown no longer than budget


def _summary(result: ProjectResult) -> str:
    if failed(result):
        return "**plan failed**"
    assert result.plan is not None
    c = result.plan.counts
    return f"Plan: {c['add']} to add, {c['change']} to change, {c['destroy']} to destroy."


def _headline(result: ProjectResult, m: Callable[[str], str], link: str | None = None) -> str:
    icon = "❌" if failed(result) else ("⚠️" if result.plan and result.plan.destroys else "✅")
    name = f"**{m(one_line(result.name))}** · " if result.name and result.name != result.dir else ""
    deleted = (
        f" · 🗑️ directory deleted: `plan -destroy` of its code at {code(result.destroy_from[:7])}"
        if result.destroy_from
        else ""
    )
    carried = f" · ↪️ carried from {code(result.carried_from[:7])}" if result.carried_from else ""
    return (
        f"- {icon} {name}dir {_where(result, m)}"
        f" · {code(result.sha[:7])} · {one_line(result.tool, 20)}{deleted}{carried} — {_summary(result)}"
        + (f" · {run_link(link)}" if link else "")
    )


def _where(result: ProjectResult, m: Callable[[str], str]) -> str:
    return f"{code(m(result.dir), 200)} · workspace {code(m(result.workspace), 200)}"


def _error_block(result: ProjectResult, m: Callable[[str], str]) -> Block:
    if result.error is not None:
        lines = plain_lines(m(result.error))
    elif result.plan is not None:
        lines = ["the plan JSON says planning errored (errored: true)"]
    else:
        lines = ["no plan was produced"]
    head = f"#### ❌ {_where(result, m)}: plan failed"

    def build(budget: int | None) -> str:
        shown = lines[-ERROR_LINES:]
        if budget is not None:
            while shown and len(head) + len(code_block(shown)) + 40 > budget:
                shown = shown[len(shown) // 4 + 1 :]
        cut = len(lines) - len(shown)
        note = f"Last {len(shown)} of {len(lines)} lines:" if cut else "Output:"
        return f"{head}\n\n{note}\n\n{code_block(shown)}"

    return build


def _drift_block(results: Sequence[ProjectResult], m: Callable[[str], str]) -> Block | None:
    items = [line for r in results for line in drift_lines(r, m)]
    if not items:
        return None
    head = "#### Changed outside Terraform\n\nFound while planning; not part of what apply will do.\n"

    def build(budget: int | None) -> str:
        room = (budget if budget is not None else 8_000) - len(head) - 1
        kept, _ = fit_items(items, room, "- … and {n} more")
        return head + "\n" + "\n".join(kept)

    return build


def _plan_block(result: ProjectResult, m: Callable[[str], str]) -> Block:
    lines = diff_lines(m(result.plan_text)) if result.plan_text.strip() else ["(no plan output)"]
    label = f"{m(one_line(result.name))} · " if result.name and result.name != result.dir else ""
    head = f"#### {label}{_where(result, m)}"
    opening = f"{head}\n\n<details><summary>Show plan</summary>\n\n"
    closing = "\n</details>"

    def build(budget: int | None) -> str:
        shown = lines
        if budget is not None:
            fence_cost = 2 * len(fence_for(lines)) + len("diff\n\n")
            shown = head_tail(lines, budget - len(opening) - len(closing) - fence_cost)
        return f"{opening}{code_block(shown, 'diff')}{closing}"

    return build


def _pack(first: str, blocks: list[Block], first_room: int, fresh_room: int) -> list[list[str]]:
    """Greedy packing: whole blocks first; a block too big for any comment is shortened to fit."""
    parts = [[first]]
    room = first_room - len(first)
    for block in blocks:
        full = block(None)
        if len(full) + 2 <= room:
            piece = full
        elif len(full) + 2 <= fresh_room:
            parts.append([])
            room, piece = fresh_room, full
        else:
            if room < MIN_ROOM:
                parts.append([])
                room = fresh_room
            piece = block(room - 2)
        parts[-1].append(piece)
        room -= len(piece) + 2
    return parts


def _layout(
    results: Sequence[ProjectResult],
    pr: int,
    sha: str,
    m: Masker,
    limit: int,
    note: str,
    notes: Notes,
    gates: Gates,
    voided: frozenset[tuple[str, str]],
    links: Mapping[str, str],
) -> list[str]:
    title = f"## plangate plan for {code(sha[:7])}"
    bad = sum(1 for r in results if failed(r))
    noun = "project" if len(results) == 1 else "projects"
    kept = sum(1 for r in results if r.carried_from)
    status = f"{len(results)} {noun} planned" + (f", **{bad} failed**" if bad else "")
    status += f" ({kept} carried forward: no input changed since their plan)" if kept else ""
    headlines, _ = fit_items(
        [_headline(r, m, links.get(r.identity)) for r in results], limit // 4, "- … and {n} more projects"
    )
    intro = "\n".join([title, "", status + (f"\n\n{m(clip(note, 1_000))}" if note else ""), "", *headlines])
    widest = marker("plan", parts=10**6, part=10**6, pr=pr, sha=sha)
    reserve = len(widest) + len(title) + 200  # marker, continuation title / footer
    warning = voided_note(voided)
    runs = code_section(gates, m, (limit - reserve - len(intro)) // 4)
    ruled = changes_section(gates, m, (limit - reserve - len(intro)) // 4, notes)
    room = limit - reserve - len(intro) - len(warning) - len(runs) - len(ruled) - 10
    sections = [warning, destroy_section(results, m, room, notes), ruled, runs]
    first = "\n\n".join([intro, *(s for s in sections if s)])
    blocks: list[Block] = [b for b in [_drift_block(results, m)] if b is not None]
    blocks += [_error_block(r, m) for r in results if failed(r)]
    blocks += [_plan_block(r, m) for r in results if r.plan_text.strip() or not failed(r)]
    parts = _pack(first, blocks, limit - reserve, limit - reserve)
    n = len(parts)
    bodies = []
    for i, pieces in enumerate(parts, start=1):
        head = marker("plan", parts=n, part=i, pr=pr, sha=sha)
        if i > 1:
            pieces = [f"{title} (part {i} of {n})", *pieces]
        elif n > 1:
            pieces = [*pieces, f"_Plan output continues in {n - 1} more comment{'s' if n > 2 else ''}._"]
        bodies.append(head + "\n" + "\n\n".join(pieces) + "\n")
    return bodies


def render_plan_comments(
    results: Sequence[ProjectResult],
    *,
    pr: int,
    sha: str,
    mask_patterns: Sequence[str] = (),
    limit: int = GITHUB_LIMIT,
    note: str = "",
    notes: Notes | None = None,
    gates: Gates | None = None,
    voided: frozenset[tuple[str, str]] = frozenset(),
    links: Mapping[str, str] | None = None,
) -> list[str]:
    """The PR's plan comment bodies (part 1 first), each at most `limit` characters. `notes`: per
    destroy, what a destroy rule says about it; `gates`: the gated changes (core.gated), whose code runs
    get a section of their own; `voided`: changes an earlier approval no longer covers; `links`: identity
    → the URL of its run's page (core.render.run_links), shown on its headline.

    Every rendered string is masked with the plans' sensitive values and `mask_patterns`
    (the marker line excepted: it holds only numbers and the SHA).
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}")
    m = Masker([s for r in results for s in r.secrets], mask_patterns)
    budget = limit
    for _ in range(5):
        laid = _layout(results, pr, sha, m, budget, note, notes or {}, gates or {}, voided, links or {})
        bodies = [_remask(b, m) for b in laid]
        over = max(len(b) for b in bodies) - limit
        if over <= 0:
            return bodies
        budget -= 2 * over  # a secret spanning two pieces grew on the final pass: leave room
    raise RuntimeError("plan comment does not fit the limit")  # fail closed rather than post a 422


def _remask(body: str, m: Masker) -> str:
    """Final pass over the assembled body (catches a value spanning two pieces)."""
    head, _, rest = body.partition("\n")
    return head + "\n" + m(rest)


def render_too_many_files(n_files: int) -> str:
    """The note for a PR whose changed-file list GitHub truncates (the API stops at 3,000)."""
    return (
        f"> [!NOTE]\n> This pull request changes {n_files:,} files; GitHub lists at most 3,000, "
        "so plangate planned every project."
    )


def render_planned_on_merge(head: str, merge: str, branch: str) -> str:
    """The note for a plan of GitHub's test merge, made because the base branch moved."""
    return (
        f"> [!NOTE]\n> `{one_line(branch, 100)}` moved since {head[:7]} was planned, so this is the plan of the "
        f"merge of {head[:7]} into it ({merge[:7]}): what merging would apply now."
    )


def render_apply_order(order: str) -> str:
    """The order a merge applies the PR's projects in (`depends_on`; waves of projects applied together
    are comma-separated), so reviewers see it before merging."""
    return f"Apply order on merge: {one_line(order, 1_000)}"


def render_config_error(key: str, problem: str) -> str:
    """An invalid `.plangate.yml`: name the key and the problem; nothing was planned or applied."""
    return (
        f"{marker('config-error', key=clip(key, 200))}\n"
        f"> [!CAUTION]\n> **`.plangate.yml` is invalid**: {code(clip(key, 200))}: {one_line(problem, 2_000)}\n"
        ">\n> Nothing was planned or applied. Fix the file and push again.\n"
    )


def render_too_many_projects(too_many: TooMany) -> str:
    """A change past the project limit: the count, the limit and what set it; nothing planned or applied."""
    return (
        f"{marker('too-many-projects', count=too_many.count, limit=too_many.limit)}\n"
        f"> [!CAUTION]\n> **Too many projects**: this change affects {too_many.count:,} Terraform projects; "
        f"plangate plans at most {too_many.limit:,} for one change ({too_many.by}).\n"
        ">\n> Nothing was planned or applied. Split the change, or raise the limit.\n"
    )


def render_fork_refused(pr: int) -> str:
    """A PR from a fork: plangate does not run a fork's Terraform unless `allow_fork_prs: true`."""
    return (
        f"{marker('fork-refused', pr=pr)}\n"
        f"> [!WARNING]\n> Pull request #{pr} comes from a fork, so plangate did not plan it: running a "
        "fork's Terraform code with this repository's credentials is not allowed here "
        "(`allow_fork_prs: false` in `.plangate.yml`).\n"
    )
