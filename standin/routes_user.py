"""Routes a user access token (`ghu_`) reaches: who am I, and which of the App's installations and repos I can see.

GitHub lists only what both the App and the person can reach: installations holding a repository where the
person has at least read permission (or on their own account), and in each, only those repositories.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import shapes
from standin.auth import not_found, require_user
from standin.state import PERMISSIONS, Installation, Repo, State, User
from standin.web import base_of, paginate, state_of


def _authenticated_user(u: User, base: str) -> dict[str, Any]:
    """`GET /user`: the public profile fields GitHub always sends, empty where the stand-in knows nothing."""
    return {
        **shapes.user(u, base),
        **dict.fromkeys(("name", "company", "blog", "location", "email", "hireable", "bio"), None),
        **dict.fromkeys(("public_repos", "public_gists", "followers", "following"), 0),
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2020-01-01T00:00:00Z",
    }


def _user_repo(r: Repo, role: str, base: str) -> dict[str, Any]:
    """A repository as a user token lists it: with that user's `permissions` on it."""
    rank = PERMISSIONS.index(role)
    levels = {"pull": 0, "triage": 1, "push": 2, "maintain": 3, "admin": 4}
    return {**shapes.repo(r, base), "permissions": {name: rank >= level for name, level in levels.items()}}


def _visible(state: State, inst: Installation, login: str) -> list[tuple[Repo, str]]:
    """The installation's repositories `login` can read, with their role on each."""
    with state.lock:
        repos = [state.repos[i] for i in sorted(inst.repo_ids)]
    roles = [(repo, state.permission(repo, login)) for repo in repos]
    return [(repo, role) for repo, role in roles if role is not None]


def _sees(state: State, inst: Installation, login: str) -> bool:
    return inst.account.login == login or bool(_visible(state, inst, login))


async def get_user(request: Request) -> Response:
    state = state_of(request)
    token = require_user(state, request)
    if isinstance(token, JSONResponse):
        return token
    return JSONResponse(_authenticated_user(state.user(token.login), base_of(request)))


async def user_installations(request: Request) -> Response:
    state = state_of(request)
    token = require_user(state, request)
    if isinstance(token, JSONResponse):
        return token
    base = base_of(request)
    with state.lock:
        installations = list(state.installations.values())
    items = [shapes.installation(i, state.app, base) for i in installations if _sees(state, i, token.login)]
    page = paginate(request, items)
    if isinstance(page, JSONResponse):
        return page
    return JSONResponse({"total_count": len(items), "installations": list(page[0])}, headers=page[1])


async def user_installation_repositories(request: Request) -> Response:
    state = state_of(request)
    token = require_user(state, request)
    if isinstance(token, JSONResponse):
        return token
    inst = state.installations.get(request.path_params["installation_id"])
    if inst is None or not _sees(state, inst, token.login):
        return not_found()
    base = base_of(request)
    items = [_user_repo(repo, role, base) for repo, role in _visible(state, inst, token.login)]
    page = paginate(request, items)
    if isinstance(page, JSONResponse):
        return page
    body = {"total_count": len(items), "repository_selection": "selected", "repositories": list(page[0])}
    return JSONResponse(body, headers=page[1])


routes = [
    Route("/user", get_user, methods=["GET"]),
    Route("/user/installations", user_installations, methods=["GET"]),
    Route("/user/installations/{installation_id:int}/repositories", user_installation_repositories, methods=["GET"]),
]
