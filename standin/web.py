"""Helpers every route shares: repo access checks, pagination with GitHub's Link header, JSON bodies."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from standin.auth import error, not_found, require_token
from standin.state import Repo, State

T = TypeVar("T")


def state_of(request: Request) -> State:
    state: State = request.app.state.standin
    return state


def base_of(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def repo_access(request: Request) -> Repo | JSONResponse:
    """The path's repository when the installation token may see it; 404 hides it otherwise, like GitHub."""
    state = state_of(request)
    token = require_token(state, request)
    if isinstance(token, JSONResponse):
        return token
    repo = state.repo_by_name(request.path_params["owner"], request.path_params["repo"])
    if repo is None or repo.installation_id != token.installation_id:
        return not_found()
    return repo


async def json_body(request: Request) -> dict[str, Any] | JSONResponse:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return error(400, "Problems parsing JSON")
    if not isinstance(body, dict):
        return error(400, "Problems parsing JSON")
    return body


SINCE_FORMAT = "The since parameter needs to be in ISO 8601 format: YYYY-MM-DDTHH:MM:SSZ"


def since_of(request: Request) -> dt.datetime | JSONResponse | None:
    """The `since` query parameter (a time without offset is UTC), or GitHub's 422 for one it cannot read."""
    raw = request.query_params.get("since")
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        return error(422, SINCE_FORMAT)
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def validation_failed(resource: str, field: str, message: str, code: str = "custom") -> JSONResponse:
    """GitHub's 422 shape for a field that fails validation."""
    return JSONResponse(
        {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "code": code, "field": field, "message": message}],
            "documentation_url": "https://docs.github.com/rest",
            "status": "422",
        },
        422,
    )


def paginate(request: Request, items: Sequence[T]) -> tuple[Sequence[T], dict[str, str]] | JSONResponse:
    """One page of items (`per_page` ≤ 100, default 30) and a Link header like GitHub's."""
    try:
        per_page = min(max(int(request.query_params.get("per_page", "30")), 1), 100)
        page = max(int(request.query_params.get("page", "1")), 1)
    except ValueError:
        return error(400, "Invalid page parameters")
    last = max((len(items) + per_page - 1) // per_page, 1)

    def url(n: int) -> str:
        return str(request.url.include_query_params(per_page=per_page, page=n))

    links = []
    if page > 1:
        links.append(f'<{url(min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{url(page + 1)}>; rel="next"')
        links.append(f'<{url(last)}>; rel="last"')
    if page > 1:
        links.append(f'<{url(1)}>; rel="first"')
    headers = {"Link": ", ".join(links)} if links else {}
    return items[(page - 1) * per_page : page * per_page], headers


def page_response(request: Request, items: Sequence[Any]) -> Response:
    """A paginated JSON array answer, as GitHub's list endpoints give it."""
    page = paginate(request, items)
    if isinstance(page, JSONResponse):
        return page
    return JSONResponse(list(page[0]), headers=page[1])
