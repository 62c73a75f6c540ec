"""What a run page shows, decided from a stored run (pure): the template only prints these values.

Every text here comes from a user's repository or from plan code (addresses, attribute values, output), so
it stays text: the template autoescapes all of it. The one exception is each output line's `html`, made by
core.ansi_html.to_html, which escapes the line itself and adds only spans of its own fixed classes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Literal, NamedTuple

from markupsafe import Markup

from core.ansi_html import to_html
from core.runs import ResourceDiff, RunGate, RunHead, RunPlan, Stored

Css = Literal["ok", "failed", "running", "waiting", "muted", "unknown"]
REFRESH_SECONDS = 10  # a running run's page reloads itself this often when JavaScript is off
FOLD_CHARS = 120  # an attribute value longer than this (or of more than FOLD_LINES lines) is folded
FOLD_LINES = 3
PREVIEW_CHARS = 60
HEADINGS = {
    "delete": "Destroy",
    "replace": "Replace",
    "unknown": "Unknown action",
    "update": "Update",
    "create": "Create",
    "read": "Read",
    "forget": "Forget (removed from state, object kept)",
}
VERDICT_WORDS: dict[str, tuple[str, Css]] = {
    "approved": ("approved", "ok"),
    "waiting": ("waiting for approval", "waiting"),
    "never": ("never allowed", "failed"),
    "voided": ("voided by a newer plan", "muted"),
}
GATE_CSS: dict[str, Css] = {"success": "ok", "failure": "failed", "error": "failed", "pending": "waiting"}
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-f]{40}")


class Value(NamedTuple):
    """One side of an attribute: None text means the attribute is absent on that side. (Named tuples: a
    large plan makes tens of thousands of these, and frozen dataclasses are several times slower to build.)"""

    text: str | None
    folded: bool = False
    preview: str = ""


ABSENT = Value(None)


class AttributeView(NamedTuple):
    path: str
    before: Value
    after: Value


@dataclass(frozen=True)
class ResourceView:
    address: str
    action: str
    gated: bool
    previous_address: str | None
    reason: str | None
    attributes: list[AttributeView]


@dataclass(frozen=True)
class Group:
    heading: str
    action: str
    gated: bool
    resources: list[ResourceView]


@dataclass(frozen=True)
class VerdictView:
    key: str
    kind: str
    state: str
    css: Css
    note: str
    approvers: str


@dataclass(frozen=True)
class GateView:
    state: str
    css: Css
    description: str
    verdicts: list[VerdictView]


@dataclass(frozen=True)
class Sibling:
    url: str
    kind: str
    project: str
    outcome: str
    css: Css
    current: bool


@dataclass(frozen=True)
class LineView:
    id: str
    html: Markup  # core.ansi_html.to_html: escaped, with spans of its fixed classes only


@dataclass(frozen=True)
class RunView:
    title: str
    kind: str
    repo: str
    repo_url: str
    number: str
    number_url: str
    sha: str
    sha_url: str
    code_sha: str
    project: str
    dir: str
    workspace: str
    tool: str
    started: str
    ended: str
    duration: str
    outcome: str
    css: Css
    summary: str
    running: bool
    refresh_seconds: int
    groups: list[Group]
    omitted: int
    outputs_changed: list[str]
    planned: bool
    gate: GateView | None
    siblings: list[Sibling]
    lines: list[LineView]
    last_line: str
    events_url: str


def run_view(stored: Stored, siblings: list[RunHead], now: float, base_url: str, github_url: str) -> RunView:
    """The page of `stored`; `siblings` the runs about the same commit (this one among them), `base_url`
    plangate's public URL, `github_url` GitHub's web host for links."""
    head = stored.head
    repo_ok = _REPO.fullmatch(head.repo) is not None
    repo_url = f"{github_url}/{head.repo}" if repo_ok and github_url else ""
    section = "pull" if head.kind == "plan" else "issues"
    return RunView(
        title=f"{head.kind} · {head.project} · {head.repo}",
        kind=head.kind,
        repo=head.repo,
        repo_url=repo_url,
        number=f"#{head.number}" if head.number is not None else "",
        number_url=f"{repo_url}/{section}/{head.number}" if repo_url and head.number is not None else "",
        sha=head.sha,
        sha_url=f"{repo_url}/commit/{head.sha}" if repo_url and _SHA.fullmatch(head.sha) else "",
        code_sha=head.code_sha or "",
        project=head.project,
        dir=head.dir,
        workspace=head.workspace,
        tool=head.tool,
        started=_utc(head.started),
        ended=_utc(head.ended) if head.ended is not None else "",
        duration=_duration((head.ended if head.ended is not None else now) - head.started),
        outcome=_outcome(head),
        css=_css(head),
        summary=head.summary,
        running=head.running,
        refresh_seconds=REFRESH_SECONDS,
        groups=groups(stored.plan),
        omitted=stored.plan.omitted if stored.plan else 0,
        outputs_changed=list(stored.plan.outputs_changed) if stored.plan else [],
        planned=stored.plan is not None,
        gate=_gate(stored.gate),
        siblings=[_sibling(s, head.id, base_url) for s in siblings],
        lines=[LineView(line.id, Markup(to_html(line.text))) for line in stored.lines],
        last_line=stored.lines[-1].id if stored.lines else "0-0",
        events_url=f"{base_url}/runs/{head.id}/events",
    )


def groups(plan: RunPlan | None) -> list[Group]:
    """Resources by (gated, action): gated ones first, then in the order of HEADINGS, each group in plan order."""
    found: dict[tuple[bool, str], list[ResourceView]] = {}
    for resource in plan.resources if plan else ():
        found.setdefault((resource.gated, resource.action), []).append(_resource(resource))
    order = list(HEADINGS)
    ranked = sorted(found, key=lambda k: (not k[0], order.index(k[1]) if k[1] in order else -1))
    return [Group(_heading(action, gated), action, gated, found[gated, action]) for gated, action in ranked]


def _heading(action: str, gated: bool) -> str:
    word = HEADINGS.get(action, f"Action {action!r}")
    return f"{word} (gated)" if gated and action not in ("delete", "replace") else word


def _resource(r: ResourceDiff) -> ResourceView:
    return ResourceView(
        address=r.address,
        action=r.action,
        gated=r.gated,
        previous_address=r.previous_address,
        reason=r.reason.replace("_", " ") if r.reason else None,  # terraform's "replace_because_tainted"
        attributes=[AttributeView(a.path, value(a.before), value(a.after)) for a in r.attributes],
    )


def value(text: str | None) -> Value:
    """A value as drawn: folded behind a preview of its first line when long."""
    if text is None:
        return ABSENT
    if len(text) <= FOLD_CHARS and text.count("\n") < FOLD_LINES:
        return Value(text)
    first, newline, _ = text.partition("\n")
    preview = first[:PREVIEW_CHARS] + ("…" if len(first) > PREVIEW_CHARS or newline else "")
    return Value(text, folded=True, preview=preview)


def _gate(gate: RunGate | None) -> GateView | None:
    if gate is None:
        return None
    return GateView(
        state=gate.state,
        css=GATE_CSS.get(gate.state, "unknown"),
        description=gate.description,
        verdicts=[
            VerdictView(
                key=v.key,
                kind=v.kind,
                state=_verdict(v.state)[0],
                css=_verdict(v.state)[1],
                note=v.note,
                approvers=", ".join(f"@{a}" for a in v.approvers),
            )
            for v in gate.verdicts
        ],
    )


def _verdict(state: str) -> tuple[str, Css]:
    """A state this page does not know is shown as given, in grey: never as approved."""
    return VERDICT_WORDS.get(state, (state, "unknown"))


def _sibling(head: RunHead, current: str, base_url: str) -> Sibling:
    url = f"{base_url}/runs/{head.id}"
    return Sibling(url, head.kind, head.project, _outcome(head), _css(head), head.id == current)


def _outcome(head: RunHead) -> str:
    return "running" if head.running else head.outcome or "ended"


def _css(head: RunHead) -> Css:
    if head.running:
        return "running"
    return "ok" if head.ok else "failed"


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
