"""Issue routes: issue comments (on issues and PRs), reactions, and the issues the bot opens.

The App's own edits and deletes of comments send it `issue_comment` `edited`/`deleted` (sender: its bot), after
the answer, as GitHub does for every change to a comment whoever makes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import comment_edits, payloads, shapes
from standin.auth import error, not_found
from standin.rollups import REACTIONS
from standin.state import Comment, Issue, PullRequest, Reaction, Repo, State, iso, utcnow
from standin.web import base_of, json_body, page_response, repo_access, since_of, state_of, validation_failed

MAX_BODY = 65536
SORTS: dict[str, Callable[[dict[str, Any]], tuple[Any, int]]] = {  # ties go by number, i.e. by creation
    "created": lambda shown: (shown["created_at"], shown["number"]),
    "updated": lambda shown: (shown["updated_at"], shown["number"]),
    "comments": lambda shown: (shown["comments"], shown["number"]),
}


def _exists(state: State, repo: Repo, number: int) -> bool:
    return (repo.id, number) in state.pulls or (repo.id, number) in state.issues


def _check_body(body: Any, resource: str) -> JSONResponse | None:
    if not isinstance(body, str):
        return validation_failed(resource, "body", "body wasn't supplied", code="missing_field")
    if len(body) > MAX_BODY:
        return validation_failed(resource, "body", f"body is too long (maximum is {MAX_BODY} characters)")
    return None


async def list_comments(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state, number = state_of(request), int(request.path_params["number"])
    since = since_of(request)
    if isinstance(since, JSONResponse):
        return since
    with state.lock:
        if not _exists(state, repo, number):
            return not_found()
        items = [
            shapes.comment(c, repo, state, base_of(request))
            for c in sorted(state.comments.values(), key=lambda c: c.id)
            if c.repo_id == repo.id and c.number == number and (since is None or c.updated_at >= since)
        ]
    return page_response(request, items)


async def create_comment(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state, number = state_of(request), int(request.path_params["number"])
    body = await json_body(request)
    if isinstance(body, JSONResponse):
        return body
    problem = _check_body(body.get("body"), "IssueComment")
    if problem is not None:
        return problem
    with state.lock:
        if not _exists(state, repo, number):
            return not_found()
        now = utcnow()
        comment = Comment(state.next_id(), repo.id, number, body["body"], state.app.bot, now, now)
        state.add_comment(comment)
        return JSONResponse(shapes.comment(comment, repo, state, base_of(request)), 201)


def _comment_of(state: State, repo: Repo, request: Request) -> Comment | None:
    comment = state.comments.get(int(request.path_params["comment_id"]))
    return comment if comment is not None and comment.repo_id == repo.id else None


async def comment_item(request: Request) -> Response:
    """GET, PATCH (same body limit as create) and DELETE (204) on one comment."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    body: dict[str, Any] = {}
    if request.method == "PATCH":
        parsed = await json_body(request)
        if isinstance(parsed, JSONResponse):
            return parsed
        body = parsed
        problem = _check_body(body.get("body"), "IssueComment")
        if problem is not None:
            return problem
    with state.lock:
        comment = _comment_of(state, repo, request)
        if comment is None:
            return not_found()
        if request.method == "GET":
            return JSONResponse(shapes.comment(comment, repo, state, base_of(request)))
        bot, base = state.app.bot, base_of(request)
        old = None
        try:
            if request.method == "PATCH":
                old = comment_edits.edit(state, comment, body["body"], bot)
            else:
                comment_edits.delete(state, comment, bot)
        except PermissionError:
            return error(403, "Resource not accessible by integration")
        action = "edited" if request.method == "PATCH" else "deleted"
        state.hookshot.emit("issue_comment", payloads.issue_comment(state, repo, comment, action, bot, base, old))
        if request.method == "DELETE":
            return Response(status_code=204)
        return JSONResponse(shapes.comment(comment, repo, state, base))


async def create_reaction(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state = state_of(request)
    body = await json_body(request)
    if isinstance(body, JSONResponse):
        return body
    content = body.get("content")
    if content not in REACTIONS:
        return validation_failed("Reaction", "content", f"content is not included in the list {list(REACTIONS)}")
    with state.lock:
        comment = _comment_of(state, repo, request)
        if comment is None:
            return not_found()
        return react(state, comment.id, content, base_of(request))


def react(state: State, comment_id: int, content: str, base: str) -> Response:
    """The App's reaction to an issue or review comment: 201 when new, 200 with the one it had already made."""
    with state.lock:
        user = state.app.bot
        existing = next(
            (
                r
                for r in state.reactions
                if r.comment_id == comment_id and r.user.login == user.login and r.content == content
            ),
            None,
        )
        reaction = existing or Reaction(state.next_id(), comment_id, user, content, utcnow())
        if existing is None:
            state.reactions.append(reaction)
    out = {
        "id": reaction.id,
        "node_id": shapes.node_id("Reaction", reaction.id),
        "user": shapes.user(reaction.user, base),
        "content": reaction.content,
        "created_at": iso(reaction.created_at),
    }
    return JSONResponse(out, 200 if existing else 201)


async def issues_collection(request: Request) -> Response:
    """GET lists issues and PRs (GitHub mixes them: a PR has `pull_request`) filtered by `state`, `creator`,
    `labels` (all of them) and `since` (updated at or after), sorted by `sort` and `direction`; POST opens one."""
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state, base = state_of(request), base_of(request)
    if request.method == "POST":
        body = await json_body(request)
        if isinstance(body, JSONResponse):
            return body
        if not isinstance(body.get("title"), str) or not body["title"]:
            return validation_failed("Issue", "title", "title wasn't supplied", code="missing_field")
        if body.get("body") is not None and (problem := _check_body(body["body"], "Issue")) is not None:
            return problem
        with state.lock:
            now = utcnow()
            number = state.next_number(repo.id)
            labels = [str(x) for x in body.get("labels") or []]
            issue = Issue(state.next_id(), repo.id, number, body["title"], body.get("body"), state.app.bot, now, now)
            issue.labels = labels
            state.issues[(repo.id, number)] = issue
            return JSONResponse(shapes.issue(state, repo, number, base), 201)
    query = request.query_params
    wanted_state, creator = query.get("state", "open"), query.get("creator", "").lower()
    wanted_labels = {x for x in query.get("labels", "").split(",") if x}
    sort_key = SORTS.get(query.get("sort", "created"), SORTS["created"])
    since = since_of(request)
    if isinstance(since, JSONResponse):
        return since
    with state.lock:
        records: list[Issue | PullRequest] = [*state.issues.values(), *state.pulls.values()]
        items = []
        for item in records:
            if item.repo_id != repo.id or (wanted_state != "all" and item.state != wanted_state):
                continue
            if (creator and item.author.login.lower() != creator) or (since is not None and item.updated_at < since):
                continue
            shown = shapes.issue(state, repo, item.number, base)
            if wanted_labels <= {label["name"] for label in shown["labels"]}:
                items.append(shown)
    items.sort(key=sort_key, reverse=query.get("direction", "desc") != "asc")
    return page_response(request, items)


async def issue_item(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    state, number = state_of(request), int(request.path_params["number"])
    body: dict[str, Any] = {}
    if request.method == "PATCH":
        parsed = await json_body(request)
        if isinstance(parsed, JSONResponse):
            return parsed
        body = parsed
        if body.get("body") is not None and (problem := _check_body(body["body"], "Issue")) is not None:
            return problem
    with state.lock:
        if not _exists(state, repo, number):
            return not_found()
        issue = state.issues.get((repo.id, number))
        if issue is not None and body:
            if body.get("state") in ("open", "closed"):
                issue.state = body["state"]
                issue.closed_at = utcnow() if issue.state == "closed" else None
            if "labels" in body:
                issue.labels = [str(x) for x in body["labels"] or []]
            issue.title = body.get("title", issue.title)
            issue.body = body.get("body", issue.body)
            issue.updated_at = utcnow()
        return JSONResponse(shapes.issue(state, repo, number, base_of(request)))


routes = [
    Route("/repos/{owner}/{repo}/issues", issues_collection, methods=["GET", "POST"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}", issue_item, methods=["GET", "PATCH"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}/comments", list_comments, methods=["GET"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}/comments", create_comment, methods=["POST"]),
    Route("/repos/{owner}/{repo}/issues/comments/{comment_id:int}", comment_item, methods=["GET", "PATCH", "DELETE"]),
    Route("/repos/{owner}/{repo}/issues/comments/{comment_id:int}/reactions", create_reaction, methods=["POST"]),
]
