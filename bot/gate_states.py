"""Which pull requests are open and what their gate says, in the words the status page shows, from the run log.

The run log holds what plangate recorded (newest first): a `plan` entry per project each time a PR's plans
are published, an `approval` entry per accepted `/approve-destroy`, a `closed` entry when GitHub closed the
PR (merged or not). Nothing here decides anything: the words only restate the `plangate/destroy` state and
description plangate already posted, and a word is green only when that state was `success`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.run_links import run_path

WAITING = "waiting for approval"
APPROVED = "approved"
NO_DESTROYS = "no destroys"
BLOCKED = "blocked"
FAILED = "failed"
UNKNOWN = "unknown"
GATE_KINDS = ("plan", "approval")
CLOSED = "closed"


@dataclass(frozen=True)
class Word:
    """What a person reads (`word`) and its colour: success, failure, pending or unknown (the CSS class)."""

    word: str
    tone: str


def gate_word(state: str, description: str) -> Word:
    """`plangate/destroy`'s (state, description) as one word. Only `success` is green; a failure that is
    neither a failed plan, a forbidden destroy nor a wait for `/approve-destroy` reads `blocked`."""
    if state == "success":
        return Word(NO_DESTROYS if description == "No destroys" else APPROVED, "success")
    if state == "error":
        return Word(FAILED, "failure")
    if state == "failure":
        if description.startswith("Cannot check destroys"):
            return Word(FAILED, "failure")
        if "no approval can unlock" in description:
            return Word(BLOCKED, "failure")
        if "/approve-destroy" in description:
            return Word(WAITING, "pending")
        return Word(BLOCKED, "failure")
    return Word(UNKNOWN, "unknown")


@dataclass(frozen=True)
class OpenPull:
    """An open PR: its head as plangate last planned it, and the entry whose gate it shows."""

    repo: str
    number: Any
    sha: str
    projects: list[str]
    gate: Mapping[str, Any]
    linked: Mapping[str, Any] | None
    """The newest plan or approval entry of the PR at its head that names a run; None when none does."""


@dataclass
class _Seen:
    """What one pass saw of a PR, newest first: positions in the log order the entries."""

    plan: tuple[int, Mapping[str, Any]] | None = None
    approval: tuple[int, Mapping[str, Any]] | None = None
    closed_at: int | None = None
    closed_shas: set[str] = field(default_factory=set)
    entries: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)


class Pulls:
    """Feed it the run log newest first (`see`), then ask which PRs are open.

    A PR is open when its newest plan or approval entry is newer than every `closed` entry of the PR and
    not at a commit the PR was closed at: a plan that was already running when the PR closed finishes at
    that commit and records after the close, and must not bring the PR back. A PR reopened and planned at a
    new commit is open again; one reopened at the very commit it was closed at shows once it is pushed to."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], _Seen] = {}

    def see(self, position: int, run: Mapping[str, Any]) -> None:
        kind = run.get("kind")
        number = run.get("number")
        if kind not in (*GATE_KINDS, CLOSED) or number in (None, ""):
            return
        seen = self._seen.setdefault((_text(run.get("repo")), str(number)), _Seen())
        if kind == CLOSED:
            seen.closed_at = position if seen.closed_at is None else seen.closed_at
            seen.closed_shas.add(_text(run.get("sha")))
            return
        if kind == "plan" and seen.plan is None:
            seen.plan = (position, run)
        if kind == "approval" and seen.approval is None:
            seen.approval = (position, run)
        seen.entries.append((position, run))

    def open(self) -> list[OpenPull]:
        """The open PRs, the most recently updated first."""
        found = [pull for seen in self._seen.values() if (pull := _open(seen)) is not None]
        return [pull for _, pull in sorted(found, key=lambda found: found[0])]


def _open(seen: _Seen) -> tuple[int, OpenPull] | None:
    """(position of the entry whose gate the PR shows, the PR), or None when it is closed or never planned."""
    head = seen.plan or seen.approval
    if head is None:
        return None
    sha = _text(head[1].get("sha"))
    gate = head
    if seen.approval is not None and _text(seen.approval[1].get("sha")) == sha and seen.approval[0] < head[0]:
        gate = seen.approval
    if (seen.closed_at is not None and seen.closed_at < gate[0]) or sha in seen.closed_shas:
        return None
    at_head = [run for _, run in seen.entries if _text(run.get("sha")) == sha]
    projects = _projects([run for run in at_head if run.get("kind") == "plan"] or [gate[1]])
    linked = next((run for run in at_head if run_path(run.get("run"))), None)
    return gate[0], OpenPull(_text(gate[1].get("repo")), gate[1].get("number"), sha, projects, gate[1], linked)


def _projects(runs: list[Mapping[str, Any]]) -> list[str]:
    found: list[str] = []
    for run in runs:
        project = _text(run.get("project"))
        if project and project not in found:
            found.append(project)
    return sorted(found)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
