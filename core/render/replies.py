"""Reply comments to slash commands, and the plangate/destroy status an approval produces (pure).

Every reply starts with a hidden marker: `plangate:approval` for an approval (the full record,
sealed, see core.approvals: made by the caller, who holds the key), `plangate:reply` otherwise, both
carrying `reply_to` (the command's comment id) so a retried job can tell it already answered. Bodies
stay under GitHub's 65,536 characters: a long destroy list is cut with an exact count, while the
marker keeps every key.
Logins, users and teams in help text are never @-mentioned (that would ping them on each /help).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.approvals import Approval, Coverage
from core.commands import NearMiss
from core.config import RepoConfig
from core.gated import KINDS, kind_of
from core.projects import identity_label
from core.render.items import gated_item, gated_phrase
from core.render.marker import marker
from core.render.status import State, describe
from core.render.text import ELLIPSIS, code, one_line

GITHUB_LIMIT = 65_536
_SLACK = 200  # separators and the cut note


def reply_marker(command: str, outcome: str, reply_to: int | None, **fields: Any) -> str:
    if reply_to is not None:
        fields["reply_to"] = reply_to
    return marker("reply", command=command, outcome=outcome, **fields)


def _count(n: int) -> str:
    return f"{n:,} destroy" if n == 1 else f"{n:,} destroys"


def _listing(addresses: dict[str, list[str]], budget: int) -> str:
    """Destroy items grouped by project (headers only when several), cut to `budget` with an exact count."""
    several = len(addresses) > 1
    total = sum(len(keys) for keys in addresses.values())
    lines: list[str] = []
    used = shown = 0
    for project, keys in addresses.items():
        label = one_line(identity_label(project))
        keys = sorted(keys, key=lambda k: KINDS.index(kind_of(k)))
        block = [*([""] if lines else []), f"**{label}** ({gated_phrase(keys)}):"] if several else []
        cost = sum(len(line) + 1 for line in block)
        if used + cost > budget:
            break
        lines.extend(block)
        used += cost
        for key in keys:
            item = gated_item(key)
            if used + len(item) + 1 > budget:
                break
            lines.append(item)
            used += len(item) + 1
            shown += 1
        else:
            continue
        break
    if shown < total:
        lines.append(f"- {ELLIPSIS} and {total - shown:,} more (all {total:,} are recorded in this comment)")
    return "\n".join(lines)


def _what(cov: Coverage) -> str:
    only_destroys = all(kind_of(k) == "destroy" for _, k in cov.approved_pairs)
    return "destroy" if only_destroys else "gated change"


def _still_open(cov: Coverage, sha: str) -> str:
    if cov.complete:
        return (
            f"Every {_what(cov)} at {sha[:7]} is now approved. Merging applies exactly these; "
            "a new push needs a new approval."
        )
    projects = sorted({p for p, _ in cov.unapproved_pairs})
    text = (
        f"Still not approved at {sha[:7]}: {gated_phrase([k for _, k in cov.unapproved_pairs])} in "
        f"{_project_names(projects)} (comment /approve-destroy, or /approve-destroy PROJECT)."
    )
    if cov.voided:
        text += (
            f"\n\n{gated_phrase([k for _, k in cov.voided])} approved before no longer covered: what they destroy "
            "(or the code they run) changed since that approval."
        )
    waiting = sorted(
        (pair, note) for pair, note in cov.notes.items() if pair in cov.unapproved_pairs and pair not in cov.never
    )
    if waiting:
        text += "\n\nUnder the default branch's rules:\n" + "\n".join(
            f"- {code(key, 300)}: {one_line(note, 200)}" for (_, key), note in waiting[:20]
        )
    if cov.never:
        text += (
            f"\n\n{gated_phrase([k for _, k in cov.never])} no approval can unlock (a `never` rule in the default "
            "branch's `destroy_rules` or `change_rules`): change the rule on the default branch first."
        )
    return text


def _project_names(names: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(one_line(identity_label(n)) for n in names[:most])
    return f"{shown} and {len(names) - most:,} more projects" if len(names) > most else shown


def render_approved(approval: Approval, cov: Coverage | None = None, *, marker: str, limit: int = GITHUB_LIMIT) -> str:
    """Reply "Approved by @x: 2 destroys in dns at abc1234:" and the list; `cov`: coverage after this
    approval; `marker`: the approval's sealed marker (core.approvals.approval_marker), which opens the body."""
    addresses = approval.addresses()
    head = (
        f"Approved by @{one_line(approval.approver, 100)}: {gated_phrase([k for _, k in approval.pairs])} in "
        f"{_project_names(list(addresses))} at {approval.sha[:7]}:"
    )
    tail = _still_open(cov, approval.sha) if cov is not None else ""
    top = marker
    budget = limit - len(top) - len(head) - len(tail) - _SLACK
    if budget < 0:
        raise ValueError("the approval record does not fit a comment; approval_for refuses such approvals")
    body = f"{top}\n{head}\n\n{_listing(addresses, budget)}\n"
    return body + (f"\n{tail}\n" if tail else "")


def render_refusal(reason: str, *, command: str = "approve-destroy", reply_to: int | None = None) -> str:
    """Reply "/approve-destroy: REASON", for a Refusal from approval_for (no destroys, unknown projects…)."""
    return f"{reply_marker(command, 'refused', reply_to)}\n/{command}: {reason}\n"


def render_not_allowed(
    login: str, reason: str, *, command: str = "approve-destroy", reply_to: int | None = None
) -> str:
    """A permission refusal: "@x /approve-destroy refused: REASON" (reason from workers.adapters.github.permissions)."""
    return f"{reply_marker(command, 'not-allowed', reply_to)}\n@{one_line(login, 100)} /{command} refused: {reason}\n"


def render_plan_running(sha: str, *, command: str = "approve-destroy", reply_to: int | None = None) -> str:
    """Approving while the plan of the head SHA has not finished: nothing exact to approve yet."""
    short = sha[:7]
    return (
        f"{reply_marker(command, 'plan-running', reply_to, sha=sha)}\n"
        f"/{command}: a plan is still running for {short}; wait for it, then approve\n"
    )


def render_near_miss(near: NearMiss, *, reply_to: int | None = None) -> str:
    """A look-alike of a command never acts; say what was probably meant and why this was not it."""
    return (
        f"{reply_marker(near.suggestion, 'near-miss', reply_to)}\n"
        f"{code(near.written, 200)} is not a plangate command ({one_line(near.reason)}): "
        f"did you mean /{near.suggestion}?\n"
    )


def render_planning(sha: str, projects: Sequence[str] = (), *, reply_to: int | None = None) -> str:
    """/plan accepted: which projects are planned again at which SHA."""
    which = ", ".join(code(p, 200) for p in projects) if projects else "every affected project"
    return f"{reply_marker('plan', 'planning', reply_to, sha=sha)}\n/plan: planning {which} at {sha[:7]}\n"


_LEVELS = {"write": "write, maintain or admin", "maintain": "maintain or admin", "admin": "admin"}


def _who(repo: str, config: RepoConfig) -> list[str]:
    policy = config.destroy_approvers
    lines = [f"- people with {_LEVELS.get(policy.permission, policy.permission)} permission on {repo}"]
    if policy.users:
        lines.append(f"- these users: {', '.join(code(u, 100) for u in policy.users)}")
    if policy.teams:
        lines.append(f"- members of the teams {', '.join(code(t, 200) for t in policy.teams)}")
    if policy.allow_self_approval:
        lines.append("\nThe pull request's author may approve their own destroys (`allow_self_approval: true`).")
    else:
        lines.append("\nNever the pull request's own author.")
    lines[-1] += " Never a bot."
    return lines


def _projects(config: RepoConfig, planned: Sequence[str], sha: str | None) -> list[str]:
    lines: list[str] = []
    if config.projects is None:
        lines.append("Discovered automatically: every changed directory holding `*.tf` files is a project.")
    else:
        for p in config.projects[:50]:
            lines.append(f"- {code(p.name, 200)}: {code(p.dir, 200)}, workspace {code(p.workspace, 200)}")
        if len(config.projects) > 50:
            lines.append(f"- {ELLIPSIS} and {len(config.projects) - 50:,} more in `.plangate.yml`")
    if planned:
        names = ", ".join(code(n, 200) for n in planned[:50])
        more = f" and {len(planned) - 50:,} more" if len(planned) > 50 else ""
        at = f" at {sha[:7]}" if sha else ""
        lines.append(f"\nPlanned in this pull request{at}: {names}{more}.")
    return lines


def render_help(
    repo: str, config: RepoConfig, *, planned: Sequence[str] = (), sha: str | None = None, reply_to: int | None = None
) -> str:
    """What plangate does in this repository: the destroy gate, who may approve, projects, commands."""
    parts = [
        reply_marker("help", "help", reply_to),
        f"### plangate on {one_line(repo)}",
        "",
        "plangate plans Terraform/OpenTofu for every pull request and applies the plan when it merges. "
        "A plan that destroys anything (delete or replace) is held by the `plangate/destroy` status until "
        "someone allowed comments `/approve-destroy`. An approval covers exactly the destroys of the latest "
        "plan at the pull request's head commit; a new push needs a new approval.",
        "",
        "**Who may approve destroys here**",
        "",
        *_who(repo, config),
        "",
        "**Projects**",
        "",
        *_projects(config, planned, sha),
        "",
        "**Commands** (the first line of a new comment; edited comments are ignored)",
        "",
        "| command | what it does |",
        "|---|---|",
        "| `/approve-destroy` | approve every gated change (destroys, what rules gate) in the latest plan of the "
        "head commit |",
        "| `/approve-destroy PROJECT ...` | approve only the destroys of the named projects |",
        "| `/plan [PROJECT ...]` | plan again (write permission or higher) |",
        "| `/accept-drift` | in a drift issue: record what changed outside Terraform as the new state, "
        "changing no infrastructure (whoever may approve destroys) |",
        "| `/help` | this message |",
        "| `/apply` | in plangate's failed-apply or drift issue: plan the apply branch's head afresh and apply it "
        "through the gate (write permission or higher) |",
        "",
    ]
    return "\n".join(parts)


def approval_status(cov: Coverage) -> tuple[State, str]:
    """plangate/destroy from coverage: success only when every destroy at the SHA is approved.

    Plans that failed are not in the coverage: check them first (render_status.destroy_status).
    """
    if cov.total == 0:
        return "success", "No destroys"
    keys = [k for _, k in cov.approved_pairs | cov.unapproved_pairs]
    found = [kind_of(k) for k in keys]
    code = found.count("code")
    parts = [f"{n:,} to destroy"] if (n := found.count("destroy")) else []
    parts += [f"{n:,} gated change{'s' if n != 1 else ''}"] if (n := found.count("change")) else []
    parts += [f"{n:,} limit{'s' if n != 1 else ''} passed"] if (n := found.count("limit")) else []
    parts += [f"{code:,} run{'s' if code == 1 else ''} code at apply"] if code else []
    gated = ", ".join(parts)
    if cov.never:
        return "failure", describe(f"{gated}; {len(cov.never):,} no approval can unlock (destroy_rules never)")
    if cov.complete:
        names = [f"@{one_line(a, 60)}" for a in cov.approvers]
        who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return "success", describe(f"{gated_phrase(keys)} approved by {who}")
    done = f" ({len(cov.approved_pairs):,} approved)" if cov.approved_pairs else ""
    return "failure", describe(f"{gated}{done} — comment /approve-destroy")


def in_reply_to_review(reply: str, *, reviewer: str, url: str) -> str:
    """A reply to a command in a review's body, posted in the conversation: it names the review it
    answers, below its marker (which must open the comment)."""
    marker_line, _, text = reply.partition("\n")
    review = f"[review]({url})" if url.startswith("https://") or url.startswith("http://") else "review"
    return f"{marker_line}\n> In reply to @{one_line(reviewer, 100)}'s {review}\n\n{text}"


def render_dismissed(*, reviewer: str, by: str, count: int, marker: str) -> str:
    """A dismissed review's approval no longer counts: who dismissed it, and that the gate is open again."""
    what = f"{count} approval{'s' if count != 1 else ''}" if count else "its approval"
    return (
        f"{marker}\n@{one_line(by, 100)} dismissed @{one_line(reviewer, 100)}'s review: {what} of destroys "
        "given in it no longer counts. `plangate/destroy` waits for an approval again.\n"
    )
