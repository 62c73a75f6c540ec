"""The status page's rows from the run log (newest first), grouped per repository in one pass. Pure.

Every value is made text here (or a link checked here); the template escapes it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bot.gate_states import CLOSED, GATE_KINDS, OpenPull, Pulls, gate_word
from bot.run_links import run_path
from bot.status_view import ApplyRow, DriftRow, EventRow, Moment, PullRow, RepoView, RunRow, Verdict

TIMELINE = 10
KNOWN_STATES = ("success", "failure", "pending", "error")
_LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z: time.gmtime's range on every platform


@dataclass
class _Repo:
    """What one pass keeps of a repository: the newest apply and drift check per project, its last runs."""

    applies: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    drift: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    timeline: list[Mapping[str, Any]] = field(default_factory=list)


def repositories(runs: Sequence[Mapping[str, Any]], now: float) -> list[RepoView]:
    """Per repository, sorted by name: open PRs, last apply and drift check per project, the last runs."""
    repos: dict[str, _Repo] = {}
    pulls = Pulls()
    for position, run in enumerate(runs):
        repo = repos.setdefault(text(run.get("repo")), _Repo())
        kind = run.get("kind")
        if kind == "apply":
            repo.applies.setdefault(text(run.get("project")), run)
        elif kind == "drift":
            repo.drift.setdefault(text(run.get("project")), run)
        if len(repo.timeline) < TIMELINE:
            repo.timeline.append(run)
        pulls.see(position, run)
    open_pulls: dict[str, list[PullRow]] = {}
    for pull in pulls.open():
        open_pulls.setdefault(pull.repo, []).append(_pull_row(pull, now))
    return [
        RepoView(
            name=name,
            pulls=open_pulls.get(name, []),
            applies=[_apply_row(run, now) for _, run in sorted(repo.applies.items())],
            drift=[_drift_row(run, now) for _, run in sorted(repo.drift.items())],
            timeline=[_event_row(run, now) for run in repo.timeline],
        )
        for name, repo in sorted(repos.items())
    ]


def _pull_row(pull: OpenPull, now: float) -> PullRow:
    word = gate_word(text(pull.gate.get("gate")), text(pull.gate.get("gate_description")))
    return PullRow(
        number=number(pull.number),
        sha=pull.sha,
        projects=", ".join(pull.projects),
        gate=Verdict(word.word, word.tone, text(pull.gate.get("gate_description"))),
        updated=moment(pull.gate.get("at"), now),
        run=run_path(pull.linked.get("run")) if pull.linked is not None else "",
    )


def apply_result(run: Mapping[str, Any]) -> Verdict:
    """Green only for `applied`; anything else (failed, blocked, waiting, died) is red with its text."""
    result = text(run.get("result"))
    if result == "applied":
        return Verdict("applied", "success", "")
    return Verdict(result or "no result", "failure", "")


def _apply_row(run: Mapping[str, Any], now: float) -> ApplyRow:
    return ApplyRow(
        project=text(run.get("project")),
        sha=text(run.get("sha")),
        number=number(run.get("number")),
        result=apply_result(run),
        at=moment(run.get("at"), now),
        run=run_path(run.get("run")),
    )


def _drift_row(run: Mapping[str, Any], now: float) -> DriftRow:
    return DriftRow(
        project=text(run.get("project")),
        sha=text(run.get("sha")),
        result=outcome(run),
        issue=number(run.get("number")),
        checked=moment(run.get("at"), now),
        run=run_path(run.get("run")),
    )


def outcome(run: Mapping[str, Any]) -> Verdict:
    """A run's outcome in a word and a colour: a PR's gate word for plans and approvals, `applied` or the
    apply's result, a drift check's result; a PR closing is a plain event (no colour)."""
    kind = run.get("kind")
    if kind in GATE_KINDS:
        gate = gate_word(text(run.get("gate")), text(run.get("gate_description")))
        return Verdict(gate.word, gate.tone, "")
    if kind == "apply":
        return apply_result(run)
    if kind == CLOSED:
        return Verdict(text(run.get("result")) or CLOSED, "event", "")
    state = text(run.get("gate"))
    word = text(run.get("result")) or state or "—"
    return Verdict(word, state if state in ("success", "failure", "pending") else "unknown", "")


def _event_row(run: Mapping[str, Any], now: float) -> EventRow:
    return EventRow(
        at=moment(run.get("at"), now),
        kind=text(run.get("kind")),
        number=number(run.get("number")),
        project=text(run.get("project")),
        outcome=outcome(run),
        run=run_path(run.get("run")),
    )


def run_row(r: Mapping[str, Any], now: float) -> RunRow:
    return RunRow(
        at=moment(r.get("at"), now),
        kind=text(r.get("kind")),
        repo=text(r.get("repo")),
        number=number(r.get("number")),
        project=text(r.get("project")),
        sha=text(r.get("sha")),
        summary=text(r.get("summary")),
        gate=verdict(text(r.get("gate")), text(r.get("gate_description"))),
        approver=text(r.get("approver")),
        result=text(r.get("result")),
        url=link(r.get("url")),
        run=run_path(r.get("run")),
    )


def text(value: Any) -> str:
    return "" if value is None else str(value)


def number(value: Any) -> str:
    return f"#{value}" if value not in (None, "") else ""


def verdict(state: str, detail: str) -> Verdict | None:
    if not state:
        return None
    return Verdict(state, state if state in KNOWN_STATES else "unknown", detail)


def link(url: Any) -> str:
    """Only http(s) links: a stored `javascript:` URL must not become clickable."""
    return url if isinstance(url, str) and urlsplit(url).scheme in ("http", "https") else ""


def utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def moment(at: Any, now: float) -> Moment | None:
    if not isinstance(at, int | float) or isinstance(at, bool) or not math.isfinite(at) or abs(at) > _LAST_SECOND:
        return None
    seconds = max(0, int(now - at))
    ago = f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"
    return Moment(ago, utc(at))
