"""Check suites and check runs as GitHub keeps them: one suite per (App, repository, head SHA), runs inside it.

Request bodies reach this module already validated (`standin.checks_validation`); it only applies them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from standin import gitops
from standin.state import App, CheckRun, CheckSuite, PullRequest, Repo, State, utcnow

# A suite's conclusion is that of its worst latest run (GitHub does not document the order; this is the stand-in's).
SEVERITY = ("action_required", "cancelled", "timed_out", "failure", "stale", "neutral", "success", "skipped")


def _when(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value).astimezone(dt.UTC)


def _head_branch(state: State, repo: Repo, sha: str) -> str | None:
    """The branch GitHub saw the commit pushed to: an open PR's head branch first, else any branch at it."""
    for pr in state.pulls.values():
        if pr.repo_id == repo.id and pr.state == "open" and pr.head_sha == sha and pr.head_repo_full_name is None:
            return pr.head_ref
    refs = gitops.git(repo.path, "for-each-ref", f"--points-at={sha}", "--format=%(refname:strip=2)", "refs/heads")
    return next(iter(refs.split()), None)


def suite_for(state: State, repo: Repo, app: App, sha: str) -> CheckSuite:
    """The App's suite for the commit, created on first use as GitHub does when a check run is created."""
    for suite in state.check_suites.values():
        if suite.repo_id == repo.id and suite.app.id == app.id and suite.head_sha == sha:
            return suite
    now = utcnow()
    before = gitops.rev(repo.path, f"{sha}^")
    suite = CheckSuite(state.next_id(), repo.id, app, sha, _head_branch(state, repo, sha), before, now, now)
    state.check_suites[suite.id] = suite
    return suite


def _apply(run: CheckRun, body: dict[str, Any]) -> None:
    """A create or update body: a conclusion completes the run; another status reopens it."""
    for key in ("name", "details_url", "external_id"):
        if key in body:
            setattr(run, key, body[key])
    if "started_at" in body:
        run.started_at = _when(body["started_at"])
    if "output" in body:
        output = body["output"]
        run.title, run.summary = output["title"], output["summary"]
        run.text = output.get("text", run.text)
        run.annotations += output.get("annotations", [])  # appended, as GitHub does on every update
    if "actions" in body:
        run.actions = [dict(action) for action in body["actions"]]
    if "conclusion" in body:
        run.status, run.conclusion = "completed", body["conclusion"]
        run.completed_at = _when(body["completed_at"]) if "completed_at" in body else utcnow()
    elif "status" in body:
        run.status, run.conclusion, run.completed_at = body["status"], None, None


def latest_per_name(runs: Iterable[CheckRun]) -> list[CheckRun]:
    """GitHub's `filter=latest`: the newest run of each name, oldest first."""
    newest: dict[str, CheckRun] = {}
    for run in sorted(runs, key=lambda r: r.id):
        newest[run.name] = run
    return sorted(newest.values(), key=lambda r: r.id)


def runs_at(state: State, repo: Repo, sha: str) -> list[CheckRun]:
    """Every check run on the commit, of every App, oldest first."""
    found = [r for r in state.check_runs.values() if r.repo_id == repo.id and r.head_sha == sha]
    return sorted(found, key=lambda r: r.id)


def refresh_suite(state: State, suite: CheckSuite) -> None:
    """queued until a run starts, in_progress until every latest run completed, then the worst conclusion."""
    runs = latest_per_name(r for r in state.check_runs.values() if r.suite_id == suite.id)
    statuses = {r.status for r in runs}
    if statuses == {"completed"}:
        found = {r.conclusion for r in runs}
        suite.status, suite.conclusion = "completed", next(c for c in SEVERITY if c in found)
    else:
        suite.status, suite.conclusion = ("queued" if statuses <= {"queued"} else "in_progress"), None
    suite.updated_at = utcnow()


def create_run(state: State, repo: Repo, app: App, body: dict[str, Any]) -> CheckRun:
    suite = suite_for(state, repo, app, body["head_sha"])
    run = CheckRun(state.next_id(), repo.id, suite.id, app, body["name"], body["head_sha"], utcnow())
    _apply(run, body)
    state.check_runs[run.id] = run
    refresh_suite(state, suite)
    return run


def update_run(state: State, run: CheckRun, body: dict[str, Any]) -> None:
    _apply(run, body)
    refresh_suite(state, state.check_suites[run.suite_id])


def rerequest(state: State, run: CheckRun) -> None:
    """What "Re-run" does to GitHub's records: the suite starts over, the run itself is left as it was."""
    suite = state.check_suites[run.suite_id]
    suite.status, suite.conclusion, suite.updated_at = "queued", None, utcnow()


def pull_requests_of(state: State, repo: Repo, sha: str) -> list[PullRequest]:
    """Open PRs of this repository whose head is the commit; a fork's pushes are not seen, as on GitHub."""
    return [
        pr
        for (repo_id, _), pr in sorted(state.pulls.items())
        if repo_id == repo.id and pr.state == "open" and pr.head_sha == sha and pr.head_repo_full_name is None
    ]


def other_app(state: State, slug: str) -> App:
    """Another App with check runs here (a CI service): found by slug, else made with `checks: write`."""
    for suite in state.check_suites.values():
        if suite.app.slug == slug and suite.app.id != state.app.id:
            return suite.app
    bot = state.user(f"{slug}[bot]", "Bot")
    permissions = {"checks": "write", "metadata": "read"}
    return App(state.next_id(), slug, slug, "", None, None, "", f"Iv1.{slug}", bot, permissions=permissions)
