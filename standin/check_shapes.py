"""GitHub's JSON for check runs and check suites (tests/fixtures/github/rest/checks__*.json), REST and webhooks."""

from __future__ import annotations

from standin import shapes
from standin.checks import pull_requests_of
from standin.shapes import Json
from standin.state import App, CheckRun, CheckSuite, Repo, State, iso

APP_CREATED = "2020-01-01T00:00:00Z"  # the stand-in's Apps have no history; GitHub always sends these two times


def app(state: State, a: App, base: str) -> Json:
    """The full "GitHub app" a check run names: GitHub requires an owner; here the first installation's account."""
    owner = min(state.installations.values(), key=lambda i: i.id).account if state.installations else a.bot
    return {
        **shapes.app(a, base),
        "owner": shapes.user(owner, base),
        "created_at": APP_CREATED,
        "updated_at": APP_CREATED,
    }


def _pulls(state: State, repo: Repo, sha: str, base: str) -> list[Json]:
    """GitHub's "Pull Request Minimal" for each open PR whose head is the commit."""
    api = f"{base}/repos/{repo.full_name}"
    side = {"id": repo.id, "url": api, "name": repo.name}
    return [
        {
            "url": f"{api}/pulls/{pr.number}",
            "id": pr.id,
            "number": pr.number,
            "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": side},
            "base": {"ref": pr.base_ref, "sha": pr.base_sha, "repo": side},
        }
        for pr in pull_requests_of(state, repo, sha)
    ]


def run(state: State, r: CheckRun, repo: Repo, base: str) -> Json:
    """A check run as the REST API answers it (the key order of GitHub's examples)."""
    url = f"{base}/repos/{repo.full_name}/check-runs/{r.id}"
    return {
        "id": r.id,
        "head_sha": r.head_sha,
        "node_id": shapes.node_id("CheckRun", r.id),
        "external_id": r.external_id,
        "url": url,
        "html_url": f"{base}/{repo.full_name}/runs/{r.id}",
        "details_url": r.details_url if r.details_url is not None else base,
        "status": r.status,
        "conclusion": r.conclusion,
        "started_at": iso(r.started_at),
        "completed_at": iso(r.completed_at) if r.completed_at else None,
        "output": {
            "title": r.title,
            "summary": r.summary,
            "text": r.text,
            "annotations_count": len(r.annotations),
            "annotations_url": f"{url}/annotations",
        },
        "name": r.name,
        "check_suite": {"id": r.suite_id},
        "app": app(state, r.app, base),
        "pull_requests": _pulls(state, repo, r.head_sha, base),
    }


def suite(state: State, s: CheckSuite, repo: Repo, base: str) -> Json:
    """A check suite as a `check_run` webhook embeds it."""
    return {
        "id": s.id,
        "node_id": shapes.node_id("CheckSuite", s.id),
        "head_branch": s.head_branch,
        "head_sha": s.head_sha,
        "status": s.status,
        "conclusion": s.conclusion,
        "url": f"{base}/repos/{repo.full_name}/check-suites/{s.id}",
        "before": s.before,
        "after": s.head_sha,
        "pull_requests": _pulls(state, repo, s.head_sha, base),
        "app": app(state, s.app, base),
        "created_at": iso(s.created_at),
        "updated_at": iso(s.updated_at),
    }
