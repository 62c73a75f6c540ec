"""Repository routes: pulls, files, commit statuses, collaborator permissions, team memberships.

Routes that run git are plain functions (Starlette runs them in its thread pool) or hand git to a
thread: like GitHub's, the stand-in's other answers do not wait behind one that reads the repository."""

from __future__ import annotations

import re

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import commit_shapes, gitops, pulls, shapes
from standin.auth import DOCS, error, not_found, require_token
from standin.state import Repo, State, Status, utcnow
from standin.web import base_of, json_body, page_response, repo_access, state_of, validation_failed

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
STATES = ("error", "failure", "pending", "success")
LEGACY_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


def get_pull(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    with state.lock:
        pr = state.pulls.get((repo.id, int(request.path_params["number"])))
        if pr is None:
            return not_found()
        body = pulls.pull_json(state, repo, pr, base_of(request))
        if pr.mergeability_unknown > 0 and pr.state == "open":  # GitHub still computing the test merge
            pr.mergeability_unknown -= 1
            body.update(mergeable=None, mergeable_state="unknown", merge_commit_sha=pr.previous_merge)
        return JSONResponse(body)


def get_branch(request: Request) -> Response:
    """GitHub's `GET /branches/{branch}`: the fields plangate reads (name, head commit, protection)."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    name = request.path_params["branch"]
    sha = gitops.rev(repo.path, f"refs/heads/{name}")
    if sha is None:
        return error(404, "Branch not found")
    base = base_of(request)
    commit = {"sha": sha, "url": f"{base}/repos/{repo.full_name}/commits/{sha}"}
    return JSONResponse({"name": name, "commit": commit, "protected": False})


def list_pulls(request: Request) -> Response:
    """GitHub's `GET /pulls`: `state` open (default), closed or all; newest first; paginated."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    wanted = request.query_params.get("state", "open")
    if wanted not in ("open", "closed", "all"):
        return validation_failed("PullRequest", "state", f"must be open, closed or all, got {wanted!r}", "invalid")
    state = state_of(request)
    with state.lock:
        items = [
            pulls.pull_json(state, repo, pr, base_of(request))
            for (repo_id, _), pr in sorted(state.pulls.items(), reverse=True)
            if repo_id == repo.id and wanted in ("all", pr.state)
        ]
    return page_response(request, items)


def pull_files(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    with state.lock:
        pr = state.pulls.get((repo.id, int(request.path_params["number"])))
    if pr is None:
        return not_found()
    items = [pulls.file_json(c, repo, pr.head_sha, base_of(request)) for c in pulls.files(state, repo, pr)]
    return page_response(request, items)


def pull_commits(request: Request) -> Response:
    """The PR's commits, oldest first, at most 250 of them (GitHub's cap), paginated."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    with state.lock:
        pr = state.pulls.get((repo.id, int(request.path_params["number"])))
    if pr is None:
        return not_found()
    items = [commit_shapes.commit(state, repo, c, base_of(request)) for c in pulls.commits(state, repo, pr)]
    return page_response(request, items)


def _commit_of(request: Request) -> tuple[Repo, State, str] | Response:
    """The repository, the state and the full SHA the path names; else the answer GitHub gives."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    sha = gitops.rev(repo.path, request.path_params["sha"])
    if sha is None:
        return error(422, f"No commit found for SHA: {request.path_params['sha']}")
    return repo, state_of(request), sha


def get_commit(request: Request) -> Response:
    """One commit, with the logins its author and committer map to."""
    named = _commit_of(request)
    if isinstance(named, Response):
        return named
    repo, state, sha = named
    parent = gitops.rev(repo.path, f"{sha}^")
    found = [c for c in gitops.log(repo.path, parent or "", sha) if c.sha == sha]
    if not found:
        return not_found()
    return JSONResponse(commit_shapes.commit(state, repo, found[0], base_of(request)))


def commit_pulls(request: Request) -> Response:
    """PRs whose head is the commit, that merged as it, or whose commits contain it."""
    named = _commit_of(request)
    if isinstance(named, Response):
        return named
    repo, state, sha = named
    with state.lock:
        found = [
            pulls.pull_json(state, repo, pr, base_of(request))
            for (repo_id, _), pr in sorted(state.pulls.items())
            if repo_id == repo.id
            and (
                sha in (pr.head_sha, pr.merge_commit_sha)
                or (
                    gitops.is_ancestor(repo.path, sha, pr.head_sha)
                    and not gitops.is_ancestor(repo.path, sha, pr.base_sha)
                )
            )
        ]
    return JSONResponse(found)


def compare(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    base_ref, sep, head_ref = request.path_params["spec"].partition("...")
    base_sha, head_sha = gitops.rev(repo.path, base_ref), gitops.rev(repo.path, head_ref)
    if not sep or base_sha is None or head_sha is None:
        return not_found()
    changes = gitops.diff_files(repo.path, base_sha, head_sha)[: pulls.MAX_FILES]
    ahead = int(gitops.git(repo.path, "rev-list", "--count", f"{base_sha}..{head_sha}").strip())
    behind = int(gitops.git(repo.path, "rev-list", "--count", f"{head_sha}..{base_sha}").strip())
    status = "identical" if ahead == behind == 0 else "ahead" if behind == 0 else "behind" if ahead == 0 else "diverged"
    base = base_of(request)
    return JSONResponse(
        {
            "url": f"{base}/repos/{repo.full_name}/compare/{request.path_params['spec']}",
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": ahead,
            "commits": _commits(repo, base_sha, head_sha, base),
            "files": [pulls.file_json(c, repo, head_sha, base) for c in changes],
        }
    )


MAX_COMPARE_COMMITS = 250  # GitHub lists at most this many commits in a comparison


def _commits(repo: Repo, base_sha: str, head_sha: str, base: str) -> list[dict[str, object]]:
    """The commits in head but not in base, oldest first, in the shape of GitHub's commit objects."""
    out = gitops.git(
        repo.path, "log", "--reverse", "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%s", f"{base_sha}..{head_sha}"
    )
    commits: list[dict[str, object]] = []
    for line in out.splitlines()[:MAX_COMPARE_COMMITS]:
        sha, parents, name, email, date, subject = line.split("\0")
        commits.append(
            {
                "sha": sha,
                "url": f"{base}/repos/{repo.full_name}/commits/{sha}",
                "html_url": f"{base}/{repo.full_name}/commit/{sha}",
                "commit": {
                    "message": subject,
                    "author": {"name": name, "email": email, "date": date},
                    "committer": {"name": name, "email": email, "date": date},
                },
                "parents": [{"sha": p} for p in parents.split()],
            }
        )
    return commits


async def create_status(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    sha = request.path_params["sha"]
    body = await json_body(request)
    if isinstance(body, JSONResponse):
        return body
    if not FULL_SHA.match(sha) or await run_in_threadpool(gitops.rev, repo.path, sha) != sha:
        return JSONResponse({"message": f"No commit found for SHA: {sha}", "documentation_url": DOCS}, 422)
    if body.get("state") not in STATES:
        return validation_failed("Status", "state", f"state is not included in the list {list(STATES)}")
    description = body.get("description")
    if isinstance(description, str) and len(description) > 140:
        return validation_failed("Status", "description", "description is too long (maximum is 140 characters)")
    with state.lock:
        status = Status(
            id=state.next_id(),
            repo_id=repo.id,
            sha=sha,
            state=body["state"],
            context=str(body.get("context") or "default"),
            description=description,
            target_url=body.get("target_url"),
            creator=state.app.bot,
            created_at=utcnow(),
        )
        state.statuses.append(status)
    return JSONResponse(shapes.status(status, repo, base_of(request)), 201)


def combined_status(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    sha = gitops.rev(repo.path, request.path_params["ref"])
    if sha is None:
        return error(422, f"No commit found for SHA: {request.path_params['ref']}")
    statuses = state.combined_statuses(repo.id, sha)
    states = {s.state for s in statuses}
    overall = (
        "failure" if states & {"error", "failure"} else "pending" if not statuses or "pending" in states else "success"
    )
    base = base_of(request)
    return JSONResponse(
        {
            "state": overall,
            "statuses": [shapes.status(s, repo, base, with_creator=False) for s in statuses],
            "sha": sha,
            "total_count": len(statuses),
            "repository": shapes.repo(repo, base),
            "commit_url": f"{base}/repos/{repo.full_name}/commits/{sha}",
            "url": f"{base}/repos/{repo.full_name}/commits/{sha}/status",
        }
    )


async def collaborator_permission(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    login = request.path_params["username"]
    perm = state.permission(repo, login)
    user = state.users.get(login)
    if perm is None or user is None:
        return error(404, f"{login} is not a user")
    return JSONResponse(
        {"permission": LEGACY_PERMISSION[perm], "role_name": perm, "user": shapes.user(user, base_of(request))}
    )


async def team_membership(request: Request) -> Response:
    state = state_of(request)
    token = require_token(state, request)
    if isinstance(token, JSONResponse):
        return token
    org, slug, login = (request.path_params[k] for k in ("org", "team_slug", "username"))
    with state.lock:
        members = state.teams.get((org.lower(), slug.lower()), set())
    if login not in members:
        return not_found()
    base = base_of(request)
    return JSONResponse(
        {"url": f"{base}/orgs/{org}/teams/{slug}/memberships/{login}", "role": "member", "state": "active"}
    )


routes = [
    Route("/repos/{owner}/{repo}/pulls", list_pulls, methods=["GET"]),
    Route("/repos/{owner}/{repo}/branches/{branch:path}", get_branch, methods=["GET"]),
    Route("/repos/{owner}/{repo}/pulls/{number:int}", get_pull, methods=["GET"]),
    Route("/repos/{owner}/{repo}/pulls/{number:int}/files", pull_files, methods=["GET"]),
    Route("/repos/{owner}/{repo}/pulls/{number:int}/commits", pull_commits, methods=["GET"]),
    Route("/repos/{owner}/{repo}/commits/{sha}/pulls", commit_pulls, methods=["GET"]),
    Route("/repos/{owner}/{repo}/commits/{sha}", get_commit, methods=["GET"]),
    Route("/repos/{owner}/{repo}/compare/{spec:path}", compare, methods=["GET"]),
    Route("/repos/{owner}/{repo}/statuses/{sha}", create_status, methods=["POST"]),
    Route("/repos/{owner}/{repo}/commits/{ref:path}/status", combined_status, methods=["GET"]),
    Route("/repos/{owner}/{repo}/collaborators/{username}/permission", collaborator_permission, methods=["GET"]),
    Route("/orgs/{org}/teams/{team_slug}/memberships/{username}", team_membership, methods=["GET"]),
]
