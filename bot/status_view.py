"""The rows the status template draws: plain values, every one of them text (the template escapes
them), made by bot.status_page from the run log and RQ's state."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Moment:
    """When something happened, as the page says it ("30 s"), with the exact UTC time for the tooltip."""

    ago: str
    utc: str


@dataclass(frozen=True)
class Verdict:
    """A gate or drift state, its CSS class (an unknown state gets a neutral one) and the detail shown under it."""

    state: str
    css: str
    detail: str


@dataclass(frozen=True)
class PullRow:
    """An open PR at its head as plangate last planned it, with its gate in one word (bot.gate_states)."""

    number: str
    sha: str
    projects: str
    gate: Verdict
    updated: Moment | None
    run: str
    """Empty, or `/runs/ID` of the PR's newest run that names one (bot.run_links)."""


@dataclass(frozen=True)
class FailedRow:
    """A project whose last apply on its apply branch failed, and the issue that says so."""

    repo: str
    project: str
    sha: str
    issue: str
    url: str


@dataclass(frozen=True)
class ApplyRow:
    """A project's newest apply: green only when it applied."""

    project: str
    sha: str
    number: str
    result: Verdict
    at: Moment | None
    run: str


@dataclass(frozen=True)
class DriftRow:
    project: str
    sha: str
    result: Verdict
    issue: str
    checked: Moment | None
    run: str


@dataclass(frozen=True)
class EventRow:
    """One line of a repository's timeline: a run, or a PR closing (a plain event, no outcome colour)."""

    at: Moment | None
    kind: str
    number: str
    project: str
    outcome: Verdict
    run: str


@dataclass(frozen=True)
class RepoView:
    """One repository at a glance."""

    name: str
    pulls: list[PullRow]
    applies: list[ApplyRow]
    drift: list[DriftRow]
    timeline: list[EventRow]


@dataclass(frozen=True)
class RunRow:
    at: Moment | None
    kind: str
    repo: str
    number: str
    project: str
    sha: str
    summary: str
    gate: Verdict | None
    approver: str
    result: str
    url: str
    """Empty unless http(s): a stored `javascript:` URL must not become clickable."""
    run: str


@dataclass(frozen=True)
class WorkerRow:
    name: str
    state: str
    job: str
    queues: str
    heartbeat: Moment | None


@dataclass(frozen=True)
class RateLimit:
    installation: str
    kind: str
    seconds: int


@dataclass(frozen=True)
class Viewer:
    """A signed-in person: who, where to sign out, and whether they can read no repository at all."""

    login: str
    signout_url: str
    sees_nothing: bool


@dataclass(frozen=True)
class StatusView:
    """What templates/status.html shows, as plain values: every decision is made here, the markup is the template's,
    and the template's autoescaping makes every value text (repo, project, summary come from users' repositories).
    Empty values show as "—"."""

    as_of: str
    refresh_seconds: int
    viewer: Viewer | None
    sandbox_off: list[str]
    """Workers that opted out of the sandbox: the first thing anyone sees."""
    sandbox_kinds: list[str]
    rate_limited: list[RateLimit]
    failed: list[FailedRow]
    """Projects whose last apply failed: listed first, main and reality differ there."""
    repos: list[RepoView]
    """Sorted by name: the repositories the reader may see that have anything in the run log."""
    runs: list[RunRow]
    queues: list[tuple[str, int]]
    workers: list[WorkerRow] | None
    """None for a signed-in person: job ids name repositories and projects, so workers are only counted."""
    workers_running: int
    workers_busy: int
