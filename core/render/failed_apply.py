"""A failed apply on the apply branch, kept in sight until an apply of the project succeeds (pure).

One open issue per project (label `FAILED_LABEL`, title `failed_issue_title`) says what failed and
what terraform had applied before it did; a later failure rewrites it for the new SHA and says so in
a comment; a successful apply closes it with `render_failed_resolved`. Every PR plan comment of the
project starts with `banner` meanwhile. Bodies are masked (the marker line excepted) and stay far
under GitHub's 65,536 characters: the failure's output is cut to its last lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.apply_outcome import Ending
from core.render.marker import marker
from core.render.mask import Masker
from core.render.replies import render_refusal, reply_marker
from core.render.text import code, code_block, one_line, plain_lines

FAILED_LABEL = "plangate:apply-failed"
FAILED_ENDINGS = frozenset({Ending.FAILED, Ending.ERROR, Ending.LOST})
RESOLVING_ENDINGS = frozenset({Ending.APPLIED, Ending.NOOP})  # reality matches the branch's code again
BANNER_MARKER = "<!-- plangate:apply-failed-banner -->"
DETAIL_CHARS = 20_000  # of a failure's masked output kept for its issue (the end: where the error is)
OUTPUT_LINES = 40
MAX_LINE = 500
MAX_APPLIED = 50
MAX_BODY = 65_536
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DONE = re.compile(r"^(?P<address>\S.*?): (?P<what>Creation|Modifications|Destruction) complete after ")
_DONE_WORD = {"Creation": "created", "Modifications": "changed", "Destruction": "destroyed"}
_WHY = {
    Ending.FAILED: "`terraform apply` failed (or what came before it did).",
    Ending.ERROR: (
        "The apply job stopped during `terraform apply` (worker killed, timed out or lost): some changes may "
        "be applied and the state lock may still be held (`terraform force-unlock LOCK_ID` once you are sure "
        "no apply runs)."
    ),
    Ending.LOST: "The apply job was lost before `terraform apply` began: nothing was applied.",
}


def failure_detail(output: str, secrets: Sequence[str], patterns: Sequence[str]) -> str:
    """What a failure's issue shows of terraform's output: masked whole, then its end kept."""
    masked = Masker(secrets, patterns)(_ANSI.sub("", output))
    return masked[-DETAIL_CHARS:]


def applied_before(output: str) -> list[tuple[str, str]]:
    """(address, what happened) for each resource terraform's output says it finished, in order."""
    found = []
    for line in plain_lines(_ANSI.sub("", output)):
        done = _DONE.match(line.strip())
        if done:
            found.append((done["address"], _DONE_WORD[done["what"]]))
    return found


def failed_issue_title(project: str, sha: str) -> str:
    return f"{failed_title_prefix(project)}{sha[:7]}"


def failed_title_prefix(project: str) -> str:
    """What every title of the project's failure issue starts with, whatever SHA it names."""
    return f"plangate: apply of {one_line(project, 200)} failed at "


@dataclass(frozen=True)
class Failure:
    """One failed apply of a project on the apply branch."""

    project: str
    dir: str
    sha: str
    branch: str
    ending: Ending
    detail: str = ""  # failure_detail of its output; empty when the apply left none


def render_failed_issue(failure: Failure, mask_patterns: Sequence[str] = ()) -> str:
    m = Masker((), mask_patterns)
    name, short, branch = code(failure.project, 200), failure.sha[:7], code(failure.branch, 200)
    lines = [
        f"## ❌ Apply of {name} failed at {short}",
        "",
        f"{branch} and reality differ: commit `{one_line(failure.sha, 64)}` (directory {code(failure.dir, 200)}) "
        "is not fully applied. " + _WHY.get(failure.ending, _WHY[Ending.FAILED]),
        "",
    ]
    detail = _ANSI.sub("", failure.detail)
    done = applied_before(detail)
    if done:
        lines += [f"Applied before it failed ({len(done):,}):"]
        lines += [f"- {code(address, MAX_LINE)} {what}" for address, what in done[:MAX_APPLIED]]
        lines += [f"- … and {len(done) - MAX_APPLIED:,} more"] if len(done) > MAX_APPLIED else []
    else:
        lines += ["terraform reported no resource applied before it failed."]
    output = [one_line(line, MAX_LINE) if len(line) > MAX_LINE else line for line in plain_lines(detail)]
    if output:
        tail = output[-OUTPUT_LINES:]
        lines += ["", f"Last {len(tail)} of {len(output)} lines:" if len(tail) < len(output) else "Output:"]
        lines += [code_block(tail)]
    lines += [
        "",
        f"`plangate/apply` stays red on the newest commit of {branch} until an apply of {name} succeeds. "
        f"Fix the cause, then comment `/apply` here: plangate plans the head of {branch} afresh and applies it "
        "through the gate (destroys and code run at apply wait for `/approve-destroy` here). A push that changes "
        "the project does the same. This issue closes when an apply of it succeeds.",
    ]
    head = marker("apply-failed", project=failure.project, sha=failure.sha, ending=str(failure.ending))
    body = m("\n".join(lines))
    return f"{head}\n{body}\n"


def render_failed_again(project: str, sha: str) -> str:
    """The comment on the project's open failure issue when a later apply fails too."""
    return (
        f"{marker('apply-failed-again', project=project, sha=sha)}\n"
        f"The apply of {code(project, 200)} failed again, at {sha[:7]}: the issue now shows that failure.\n"
    )


def render_failed_resolved(project: str, sha: str, branch: str) -> str:
    return (
        f"{marker('apply-failed-resolved', project=project, sha=sha)}\n"
        f"✅ An apply of {code(project, 200)} at {sha[:7]} succeeded: {code(branch, 200)} and reality agree "
        "again. Closing.\n"
    )


def banner_line(project: str, branch: str, number: int) -> str:
    return f"⚠ {one_line(branch, 100)}'s last apply of {code(project, 200)} failed: #{number}"


def banner(lines: Sequence[str]) -> str:
    """The block a plan comment starts with (after its marker line); empty for no failure."""
    if not lines:
        return ""
    return f"{BANNER_MARKER}\n" + "\n".join(lines) + "\n\n"


def with_banner(body: str, block: str, limit: int = MAX_BODY) -> str:
    """`body` (a plan comment: its first line is its marker) starting with `block` instead of any banner
    it had; without a banner when adding it would break GitHub's limit."""
    head, sep, rest = body.partition("\n")
    if rest.startswith(BANNER_MARKER):
        end = rest.find("\n\n")
        rest = rest[end + 2 :] if end >= 0 else ""
    bannered = f"{head}{sep}{block}{rest}"
    return bannered if len(bannered) <= limit else f"{head}{sep}{rest}"


def render_apply_started(project: str, sha: str, branch: str, *, reply_to: int | None) -> str:
    """`/apply` accepted: what is planned and applied, and where the outcome will be said."""
    return (
        f"{reply_marker('apply', 'applying', reply_to, sha=sha, project=project)}\n"
        f"/apply: planning {code(project, 200)} at {sha[:7]} (the head of {code(branch, 200)}) and applying it "
        "through the gate; the outcome is posted here. Destroys and code that runs at apply wait for "
        "`/approve-destroy` here.\n"
    )


def render_apply_elsewhere(*, reply_to: int | None) -> str:
    """`/apply` written anywhere but a failed-apply or drift issue."""
    return render_refusal(
        "works only in the issue plangate opens for a project whose apply failed (`plangate: apply of NAME "
        "failed at SHA`) or that drifted; on a pull request, merging applies it",
        command="apply",
        reply_to=reply_to,
    )
