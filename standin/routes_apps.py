"""App routes: the App itself, installations, installation tokens, the manifest conversion."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import shapes
from standin.auth import error, not_found, require_jwt, require_token
from standin.state import iso, utcnow
from standin.web import base_of, page_response, paginate, state_of


async def get_app(request: Request) -> Response:
    state = state_of(request)
    problem = require_jwt(state, request)
    if problem is not None:
        return problem
    return JSONResponse(shapes.app(state.app, base_of(request)))


async def list_installations(request: Request) -> Response:
    state = state_of(request)
    problem = require_jwt(state, request)
    if problem is not None:
        return problem
    base = base_of(request)
    with state.lock:
        items = [shapes.installation(i, state.app, base) for i in state.installations.values()]
    return page_response(request, items)


async def create_token(request: Request) -> Response:
    state = state_of(request)
    problem = require_jwt(state, request)
    if problem is not None:
        return problem
    inst = state.installations.get(int(request.path_params["installation_id"]))
    if inst is None:
        return not_found()
    token, record = state.mint_token(inst.id)
    base = base_of(request)
    with state.lock:
        repos = [shapes.repo(state.repos[i], base) for i in sorted(inst.repo_ids)]
    return JSONResponse(
        {
            "token": token,
            "expires_at": iso(record.expires_at),
            "permissions": dict(inst.permissions),
            "repository_selection": "selected",
            "repositories": repos,
        },
        201,
    )


async def repo_installation(request: Request) -> Response:
    """JWT only: GitHub refuses an installation token here."""
    state = state_of(request)
    problem = require_jwt(state, request)
    if problem is not None:
        return problem
    repo = state.repo_by_name(request.path_params["owner"], request.path_params["repo"])
    if repo is None or repo.installation_id is None:
        return not_found()
    return JSONResponse(shapes.installation(state.installations[repo.installation_id], state.app, base_of(request)))


async def installation_repositories(request: Request) -> Response:
    state = state_of(request)
    token = require_token(state, request)
    if isinstance(token, JSONResponse):
        return token
    base = base_of(request)
    with state.lock:
        inst = state.installations[token.installation_id]
        repos = [shapes.repo(state.repos[i], base) for i in sorted(inst.repo_ids)]
    page = paginate(request, repos)
    if isinstance(page, JSONResponse):
        return page
    body = {"total_count": len(repos), "repository_selection": "selected", "repositories": list(page[0])}
    return JSONResponse(body, headers=page[1])


async def manifest_conversion(request: Request) -> Response:
    """A code is single-use and expires after an hour; the answer carries the App's secrets."""
    state = state_of(request)
    code = request.path_params["code"]
    with state.lock:
        expires = state.manifest_codes.pop(code, None)
    if expires is None or expires <= utcnow():
        return not_found()
    app = state.app
    if app.private_key_pem is None:
        return error(422, "The App has no private key to hand out")
    body = {
        **shapes.app(app, base_of(request)),
        "owner": shapes.user(next(iter(state.installations.values())).account, base_of(request))
        if state.installations
        else None,
        "created_at": iso(utcnow()),
        "updated_at": iso(utcnow()),
        "client_secret": app.client_secret,
        "webhook_secret": app.webhook_secret,
        "pem": app.private_key_pem,
    }
    return JSONResponse(body, 201)


routes = [
    Route("/app", get_app, methods=["GET"]),
    Route("/app/installations", list_installations, methods=["GET"]),
    Route("/app/installations/{installation_id:int}/access_tokens", create_token, methods=["POST"]),
    Route("/repos/{owner}/{repo}/installation", repo_installation, methods=["GET"]),
    Route("/installation/repositories", installation_repositories, methods=["GET"]),
    Route("/app-manifests/{code}/conversions", manifest_conversion, methods=["POST"]),
]
