"""Replies to `/accept-drift` (pure: data in, strings out).

The command is answered twice: at once (`render_accepting`: who asked, that a refresh-only plan of the
apply branch's head is coming), and by the job with its outcome (`render_accept_result`): what was
accepted, resource by resource with each changed attribute before → after (the drift comment's own
items, core/render/drift.py), or why nothing was. Each reply opens with a `plangate:reply` marker
naming the command's comment, is masked with the plan's secrets and the default branch's
`mask_patterns`, and stays under GitHub's 65,536 characters (a long list says how many it left out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from core.plan import Plan
from core.render.drift import GITHUB_LIMIT, MORE, drift_item, drifted
from core.render.mask import Masker, fit_masked
from core.render.replies import reply_marker
from core.render.text import code, code_block, fit_items, one_line, plain_lines

COMMAND = "accept-drift"
OUTPUT_LINES = 40  # of a failed step, the reply quotes this many last lines
_SLACK = 64
_SHA = re.compile(r"[0-9a-f]{40}")

Result = Literal["accepted", "nothing", "refused", "failed", "lost"]


def render_accepting(*, project: str, branch: str, login: str, reply_to: int | None = None) -> str:
    """The command was allowed: the job plans and applies next."""
    return (
        f"{reply_marker(COMMAND, 'accepting', reply_to)}\n"
        f"/{COMMAND} by @{one_line(login, 100)}: planning `terraform plan -refresh-only` of {code(project, 200)} "
        f"at the head of {code(branch, 200)}; if it finds changes made outside Terraform, and nothing else, "
        "they are recorded in the state (no infrastructure is changed). The outcome follows here.\n"
    )


_HEADLINES: dict[Result, str] = {
    "accepted": "✅ Drift accepted in {project} at {sha}: the state now records what changed outside Terraform. "
    "No infrastructure was changed.",
    "nothing": "Nothing to accept in {project} at {sha}: the refresh found no change made outside Terraform.",
    "refused": "⛔ Not accepted in {project} at {sha}: {reason}. Nothing was applied.",
    "failed": "❌ Accepting drift in {project} at {sha} failed: {reason}.",
    "lost": "❓ The worker accepting drift in {project} at {sha} was lost during `terraform apply` of the "
    "refresh-only plan, so the state may or may not record it now. plangate does not run it twice: the drift "
    "check queued now says what the state holds.",
}
_AFTER: dict[Result, str] = {
    "accepted": "This issue closes when the next drift check (queued now) finds no drift. If the code itself "
    "still differs from the infrastructure, that check reports it: merge a fix.",
    "nothing": "If this issue still reports changes, they are between the code and the state, not drift made "
    "outside Terraform: merge a fix to the code, or comment `/plan` to check again.",
    "refused": "",
    "failed": "Comment `/accept-drift` to try again, or `/plan` to check the drift again.",
    "lost": "",
}


def render_accept_result(
    *,
    project: str,
    sha: str,
    result: Result,
    plan: Plan | None = None,
    reason: str = "",
    output: str = "",
    mask_patterns: Sequence[str] = (),
    reply_to: int | None = None,
    limit: int = GITHUB_LIMIT,
) -> str:
    """The outcome: the accepted (or, refused or failed, the found) drift, each attribute before → after.
    `sha`: the commit planned, or words for where it would have been when the run stopped before knowing."""
    m = Masker(plan.sensitive_values if plan is not None else (), mask_patterns)
    at = sha[:7] if _SHA.fullmatch(sha) else one_line(sha, 200)
    headline = _HEADLINES[result].format(project=code(project, 200), sha=at, reason=one_line(reason, 2_000))
    found = drifted(plan) if plan is not None and result != "nothing" else []
    verb = "Accepted" if result == "accepted" else "Found"
    title = f"**{verb}: changed outside Terraform ({len(found):,})**"
    items = [drift_item(c, m) for c in found]
    tail = plain_lines(output)[-OUTPUT_LINES:] if output.strip() and result in ("failed", "refused") else []
    after = _AFTER[result]
    head = reply_marker(COMMAND, result, reply_to, **({"sha": sha} if _SHA.fullmatch(sha) else {}))

    def build(budget: int) -> str:
        parts = [headline]
        block = code_block(tail) if tail else ""
        room = budget - len(head) - len(headline) - len(title) - len(block) - len(after) - _SLACK
        if items:
            parts.append(title + "\n" + "\n".join(fit_items(items, max(room, 0), MORE)[0]))
        if block:
            parts.append(f"Last {len(tail)} lines of output:\n{block}")
        if after:
            parts.append(after)
        return f"{head}\n" + "\n\n".join(parts) + "\n"

    return fit_masked(build, limit, m)
