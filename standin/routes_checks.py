"""The Checks API's check-run routes: create, update, get, list for a ref; and the events they cause.

Only an installation token whose installation was granted `checks` reaches them (`write` to create or update);
a user's token cannot write check runs. Creating or completing a run sends the App its own `check_run`
`created`/`completed`, after the answer, as GitHub does.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import check_shapes, checks, gitops, payloads_checks
from standin.auth import error, not_found, require_token
from standin.checks_validation import CREATE, UPDATE, refusal
from standin.request_schema import Schema
from standin.state import CheckRun, Repo, State
from standin.web import base_of, json_body, paginate, state_of

DOCS = "https://docs.github.com/rest/checks/runs"
CREATE_DOCS = f"{DOCS}#create-a-check-run"
UPDATE_DOCS = f"{DOCS}#update-a-check-run"
GET_DOCS = f"{DOCS}#get-a-check-run"
LIST_DOCS = f"{DOCS}#list-check-runs-for-a-git-reference"
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")


def _user_token(state: State, request: Request) -> bool:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() in ("token", "bearer") and state.valid_user_token(value.strip()) is not None


def _access(request: Request, need: str, docs: str) -> Repo | JSONResponse:
    """The repository, when an installation token may `need` ("read" | "write") its check runs."""
    state = state_of(request)
    if need == "write" and _user_token(state, request):
        return error(403, "You must authenticate via a GitHub App.", docs)
    token = require_token(state, request)
    if isinstance(token, JSONResponse):
        return token
    repo = state.repo_by_name(request.path_params["owner"], request.path_params["repo"])
    if repo is None or repo.installation_id != token.installation_id:
        return not_found()
    granted = state.installations[token.installation_id].permissions.get("checks")
    if granted is None or (need == "write" and granted != "write"):
        return error(403, "Resource not accessible by integration", docs)
    return repo


def _emit(state: State, repo: Repo, run: CheckRun, actions: list[str], base: str) -> None:
    for action in actions:
        state.hookshot.emit("check_run", payloads_checks.check_run(state, repo, run, action, state.app.bot, base))


async def _write_request(request: Request, schema: Schema, docs: str) -> tuple[Repo, dict[str, Any]] | JSONResponse:
    """The repository and the body of a create or update, or GitHub's refusal of either."""
    repo = _access(request, "write", docs)
    if isinstance(repo, JSONResponse):
        return repo
    body = await json_body(request)
    if isinstance(body, JSONResponse):
        return body
    problem = refusal(schema, body, docs)
    return problem if problem is not None else (repo, body)


async def create_run(request: Request) -> Response:
    checked = await _write_request(request, CREATE, CREATE_DOCS)
    if isinstance(checked, JSONResponse):
        return checked
    repo, body = checked
    return await run_in_threadpool(_created, state_of(request), repo, body, base_of(request))


def _created(state: State, repo: Repo, body: dict[str, Any], base: str) -> Response:
    """The run made, in a thread: it runs git, and GitHub answers other requests meanwhile."""
    sha = body["head_sha"]
    if not FULL_SHA.match(sha) or gitops.rev(repo.path, sha) != sha:
        return error(422, f"No commit found for SHA: {sha}", CREATE_DOCS)
    with state.lock:
        run = checks.create_run(state, repo, state.app, body)
        _emit(state, repo, run, ["created", "completed"] if run.status == "completed" else ["created"], base)
        return JSONResponse(check_shapes.run(state, run, repo, base), 201)


def _run_of(state: State, repo: Repo, request: Request) -> CheckRun | None:
    run = state.check_runs.get(int(request.path_params["check_run_id"]))
    return run if run is not None and run.repo_id == repo.id else None


async def update_run(request: Request) -> Response:
    """A run of another App is a 404, like an unknown one."""
    checked = await _write_request(request, UPDATE, UPDATE_DOCS)
    if isinstance(checked, JSONResponse):
        return checked
    repo, body = checked
    state, base = state_of(request), base_of(request)
    with state.lock:
        run = _run_of(state, repo, request)
        if run is None or run.app.id != state.app.id:
            return not_found()
        checks.update_run(state, run, body)
        _emit(state, repo, run, ["completed"] if "conclusion" in body else [], base)
        return JSONResponse(check_shapes.run(state, run, repo, base))


async def get_run(request: Request) -> Response:
    repo = _access(request, "read", GET_DOCS)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    with state.lock:
        run = _run_of(state, repo, request)
        if run is None:
            return not_found()
        return JSONResponse(check_shapes.run(state, run, repo, base_of(request)))


def list_for_ref(request: Request) -> Response:
    """`filter=latest` (the default) keeps the newest run of each name; then `check_name`, `status`, `app_id`."""
    repo = _access(request, "read", LIST_DOCS)
    if isinstance(repo, JSONResponse):
        return repo
    ref = request.path_params["ref"]
    sha = gitops.rev(repo.path, ref)
    if sha is None:
        return error(422, f"No commit found for SHA: {ref}", LIST_DOCS)
    state, query = state_of(request), request.query_params
    with state.lock:
        runs = checks.runs_at(state, repo, sha)
        if query.get("filter", "latest") != "all":
            runs = checks.latest_per_name(runs)
        runs = [
            r
            for r in reversed(runs)
            if query.get("check_name", r.name) == r.name
            and query.get("status", r.status) == r.status
            and query.get("app_id", str(r.app.id)) == str(r.app.id)
        ]
        shown = [check_shapes.run(state, r, repo, base_of(request)) for r in runs]
    page = paginate(request, shown)
    if isinstance(page, JSONResponse):
        return page
    return JSONResponse({"total_count": len(shown), "check_runs": list(page[0])}, headers=page[1])


routes = [
    Route("/repos/{owner}/{repo}/check-runs", create_run, methods=["POST"]),
    Route("/repos/{owner}/{repo}/check-runs/{check_run_id:int}", get_run, methods=["GET"]),
    Route("/repos/{owner}/{repo}/check-runs/{check_run_id:int}", update_run, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/commits/{ref:path}/check-runs", list_for_ref, methods=["GET"]),
]
