"""`GET /repos/{owner}/{repo}/activity`, "List repository activities" (REST 2022-11-28): who changed which branch.

As documented: newest first unless `direction=asc`; `per_page` up to 100 (default 30); filters `ref` (a branch name
or `refs/heads/...`), `actor` (a login), `activity_type` and `time_period` (`day`: the past 24 hours, `week`: the
past 168 hours); and pages by `before`/`after` cursors that the Link header gives, not by `page`.

Not documented, and chosen here: the length of `month` (30 days), `quarter` (91) and `year` (365); that a cursor
is opaque and names the item it stands for (`after`: the items listed after it, `before`: the page just before
it; both: the items between, from the `after` side); that the Link header carries `next` and `prev` only (no
`last`, which cursors cannot reach); that `page` is ignored; and that an unknown value of an enumerated parameter
or a cursor the stand-in did not make is GitHub's 422 "Validation Failed" (the documented error) naming it.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import activity
from standin.auth import error
from standin.state import Activity, utcnow
from standin.web import base_of, repo_access, state_of

DOCS = "https://docs.github.com/rest/repos/repos#list-repository-activities"
PERIODS = {"day": 1, "week": 7, "month": 30, "quarter": 91, "year": 365}  # in days
CHOICES = {"direction": ("asc", "desc"), "time_period": tuple(PERIODS), "activity_type": activity.TYPES}
_PREFIX = "activity:"


def cursor(item: Activity) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{item.id}".encode()).decode()


def _item_id(raw: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(raw.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    number = text.removeprefix(_PREFIX)
    return int(number) if text.startswith(_PREFIX) and number.isdigit() else None


def _invalid(message: str) -> JSONResponse:
    """GitHub's `validation_failed_simple`: the errors are plain strings."""
    body = {"message": "Validation Failed", "errors": [message], "documentation_url": DOCS, "status": "422"}
    return JSONResponse(body, 422)


def _wanted(item: Activity, query: QueryParams, now: dt.datetime) -> bool:
    ref, actor = query.get("ref"), query.get("actor")
    if ref and item.ref != (ref if ref.startswith("refs/") else f"refs/heads/{ref}"):
        return False
    if actor and (item.actor is None or item.actor.login.lower() != actor.lower()):
        return False
    if query.get("activity_type") and item.activity_type != query["activity_type"]:
        return False
    period = query.get("time_period")
    return not period or item.timestamp >= now - dt.timedelta(days=PERIODS[period])


async def list_activities(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    query = request.query_params
    for name, allowed in CHOICES.items():
        if name in query and query[name] not in allowed:
            return _invalid(f"{name} must be one of: {', '.join(allowed)}")
    marks: dict[str, int] = {}
    for name in ("after", "before"):
        if query.get(name):
            found = _item_id(query[name])
            if found is None:
                return _invalid(f"{name} must be a cursor given in the Link header")
            marks[name] = found
    try:
        per_page = min(max(int(query.get("per_page", "30")), 1), 100)
    except ValueError:
        return error(400, "Invalid page parameters")
    ascending, state, now = query.get("direction", "desc") == "asc", state_of(request), utcnow()
    with state.lock:
        listed = [a for a in state.activities if a.repo_id == repo.id and _wanted(a, query, now)]
    listed.sort(key=lambda a: a.id, reverse=not ascending)

    def rank(item_id: int) -> int:  # the position in listing order, comparable across filtered-out items
        return item_id if ascending else -item_id

    window = [
        a
        for a in listed
        if ("after" not in marks or rank(a.id) > rank(marks["after"]))
        and ("before" not in marks or rank(a.id) < rank(marks["before"]))
    ]
    page = window[-per_page:] if "before" in marks and "after" not in marks else window[:per_page]

    def link(rel: str, **params: str | int) -> str:
        url = request.url.remove_query_params(["after", "before", "page"]).include_query_params(**params)
        return f'<{url}>; rel="{rel}"'

    links = []
    if page and rank(listed[-1].id) > rank(page[-1].id):
        links.append(link("next", per_page=per_page, after=cursor(page[-1])))
    if page and rank(listed[0].id) < rank(page[0].id):
        links.append(link("prev", per_page=per_page, before=cursor(page[0])))
    base = base_of(request)
    headers = {"Link": ", ".join(links)} if links else {}
    return JSONResponse([activity.to_json(a, base) for a in page], headers=headers)


routes = [Route("/repos/{owner}/{repo}/activity", list_activities, methods=["GET"])]
