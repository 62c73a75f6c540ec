"""Review routes: the App's reviews, line comments, replies in review threads, edits, dismissals, reactions.

The App acts with its installation's `pull_requests` permission (read to look, write to change anything) and
GitHub's rules in `standin.reviews`; every change sends its webhook after the answer (sender: the App's bot).
Routes that read the diff run in Starlette's thread pool, as git-reading routes do elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import gitops, payloads_reviews, review_shapes
from standin import reviews as rules
from standin.auth import error, not_found
from standin.request_schema import Schema, invalid_request, problems
from standin.reviews import Review, ReviewComment
from standin.rollups import REACTIONS
from standin.routes_issues import react
from standin.state import PullRequest, Repo
from standin.web import base_of, json_body, page_response, repo_access, state_of, validation_failed

DOCS = "https://docs.github.com/rest/pulls/"
STRING: Schema = {"type": "string"}
BODY: Schema = {"type": "object", "properties": {"body": STRING}, "required": ["body"]}
REVIEW: Schema = {
    "type": "object",
    "properties": {"body": STRING, "commit_id": STRING, "event": {"type": "string", "enum": list(rules.EVENTS)}},
}
DISMISSAL: Schema = {
    "type": "object",
    "properties": {"message": STRING, "event": {"type": "string", "enum": ["DISMISS"]}},
    "required": ["message"],
}
LINE_COMMENT: Schema = {
    "type": "object",
    "properties": {
        "body": STRING,
        "commit_id": STRING,
        "path": STRING,
        "line": {"type": "integer"},
        "in_reply_to": {"type": "integer"},
    },
    "required": ["body", "commit_id", "path"],
}
REACTION: Schema = {
    "type": "object",
    "properties": {"content": {"type": "string", "enum": list(REACTIONS)}},
    "required": ["content"],
}


def pr_key(pr: PullRequest) -> tuple[int, int]:
    return pr.repo_id, pr.number


class Call:
    """One checked request: the repository, the JSON body, the base URL, and what the path names."""

    def __init__(self, request: Request, repo: Repo, body: dict[str, Any]) -> None:
        self.state, self.repo, self.body, self.base = state_of(request), repo, body, base_of(request)
        self.request, self.params, self.method = request, request.path_params, request.method

    def pull(self) -> PullRequest | None:
        return self.state.pulls.get((self.repo.id, int(self.params["number"])))

    def review(self) -> Review | None:
        found = self.state.reviews.get(int(self.params["review_id"]))
        ok = found is not None and (found.repo_id, found.number) == (self.repo.id, int(self.params["number"]))
        return found if ok else None

    def comment(self) -> ReviewComment | None:
        found = self.state.review_comments.get(int(self.params["comment_id"]))
        return found if found is not None and found.repo_id == self.repo.id else None

    def emit_review(self, review: Review, action: str, old: str | None = None) -> None:
        bot = self.state.app.bot
        payload = payloads_reviews.review(self.state, self.repo, review, action, bot, self.base, old)
        self.state.hookshot.emit("pull_request_review", payload)

    def emit_comment(self, comment: ReviewComment, action: str, old: str | None = None) -> None:
        bot = self.state.app.bot
        payload = payloads_reviews.review_comment(self.state, self.repo, comment, action, bot, self.base, old)
        self.state.hookshot.emit("pull_request_review_comment", payload)


def unprocessable(message: str) -> JSONResponse:
    """GitHub's "Validation Error Simple": a 422 whose `errors` are plain strings."""
    body = {"message": "Unprocessable Entity", "errors": [message], "documentation_url": DOCS, "status": "422"}
    return JSONResponse(body, 422)


def _route(schema: Schema | None, handler: Callable[[Call], Response]) -> Callable[[Request], Any]:
    """Check access (GET: `pull_requests` read; else write) and the body, then run `handler` in a thread.
    A broken rule answers as GitHub does: PermissionError 403, ValueError 422."""

    async def endpoint(request: Request) -> Response:
        repo = repo_access(request)
        if isinstance(repo, JSONResponse):
            return repo
        state = state_of(request)
        granted = state.installations[repo.installation_id or 0].permissions.get("pull_requests")
        if granted is None or (request.method != "GET" and granted != "write"):
            return error(403, "Resource not accessible by integration")
        body: dict[str, Any] = {}
        if schema is not None:
            parsed = await json_body(request)
            if isinstance(parsed, JSONResponse):
                return parsed
            found = problems(schema, parsed)
            if found:
                return invalid_request(found, DOCS)
            body = parsed
        call = Call(request, repo, body)
        try:
            return await run_in_threadpool(_locked, call, handler)
        except PermissionError:
            return error(403, "Resource not accessible by integration")
        except ValueError as refused:
            return unprocessable(str(refused))

    return endpoint


def _locked(call: Call, handler: Callable[[Call], Response]) -> Response:
    with call.state.lock:
        return handler(call)


def reviews_collection(call: Call) -> Response:
    pr = call.pull()
    if pr is None:
        return not_found()
    if call.method == "GET":
        found = sorted(call.state.reviews.values(), key=lambda r: r.id)
        mine = [review_shapes.review(r, call.repo, call.base) for r in found if (r.repo_id, r.number) == pr_key(pr)]
        return page_response(call.request, mine)
    if "event" not in call.body:
        raise ValueError("the stand-in does not model pending reviews: send an event")
    commit_id = call.body.get("commit_id")
    if commit_id is not None and gitops.rev(call.repo.path, commit_id) != commit_id:
        return validation_failed("PullRequestReview", "commit_id", "commit_id is not part of the pull request")
    body, bot = call.body.get("body", ""), call.state.app.bot
    made = rules.submit(call.state, call.repo, pr, bot, body, call.body["event"], commit_id, call.base)
    call.emit_review(made, "submitted")
    return JSONResponse(review_shapes.review(made, call.repo, call.base))


def review_item(call: Call) -> Response:
    """GET one review; PUT changes its body (`pull_request_review` `edited`)."""
    review = call.review()
    if review is None:
        return not_found()
    if call.method == "PUT":
        old = rules.edit(call.state, review, call.body["body"], call.state.app.bot)
        call.emit_review(review, "edited", old)
    return JSONResponse(review_shapes.review(review, call.repo, call.base))


def dismissal(call: Call) -> Response:
    review = call.review()
    if review is None:
        return not_found()
    rules.dismiss(call.state, review, call.state.app.bot)
    call.emit_review(review, "dismissed")
    return JSONResponse(review_shapes.review(review, call.repo, call.base))


def _created(call: Call, comment: ReviewComment, around: Review) -> Response:
    call.emit_comment(comment, "created")
    call.emit_review(around, "submitted")
    return JSONResponse(review_shapes.review_comment(comment, call.repo, call.state, call.base), 201)


def comments_collection(call: Call) -> Response:
    """GET the PR's review comments; POST one on a line of the diff (or, with `in_reply_to`, a reply)."""
    pr = call.pull()
    if pr is None:
        return not_found()
    if call.method == "GET":
        found = sorted(call.state.review_comments.values(), key=lambda c: c.id)
        shown = [
            review_shapes.review_comment(c, call.repo, call.state, call.base)
            for c in found
            if pr_key(pr) == (c.repo_id, c.number)
        ]
        return page_response(call.request, shown)
    body, bot = call.body, call.state.app.bot
    if "in_reply_to" in body:
        parent = call.state.review_comments.get(body["in_reply_to"])
        if parent is None or pr_key(pr) != (parent.repo_id, parent.number):
            return not_found()
        return _created(call, *rules.comment(call.state, call.repo, pr, bot, body["body"], parent, call.base))
    if "line" not in body:
        return validation_failed("PullRequestReviewComment", "line", "line wasn't supplied", "missing_field")
    if gitops.rev(call.repo.path, body["commit_id"]) != body["commit_id"]:
        return validation_failed("PullRequestReviewComment", "commit_id", "commit_id is not part of the pull request")
    if review_shapes.diff_position(call.repo, pr.base_sha, body["commit_id"], body["path"], body["line"]) is None:
        field = "pull_request_review_thread.line"
        return validation_failed("PullRequestReviewComment", field, f"{field} must be part of the diff")
    where = (body["path"], body["line"], body["commit_id"])
    return _created(call, *rules.comment(call.state, call.repo, pr, bot, body["body"], where, call.base))


def reply(call: Call) -> Response:
    """A reply in the thread of the path's comment (whose thread's first comment it answers)."""
    pr, parent = call.pull(), call.comment()
    if pr is None or parent is None or pr_key(pr) != (parent.repo_id, parent.number):
        return not_found()
    bot = call.state.app.bot
    return _created(call, *rules.comment(call.state, call.repo, pr, bot, call.body["body"], parent, call.base))


def comment_item(call: Call) -> Response:
    """GET, PATCH (`edited`) and DELETE (204, `deleted`) one review comment."""
    comment = call.comment()
    if comment is None:
        return not_found()
    if call.method == "PATCH":
        old = rules.edit(call.state, comment, call.body["body"], call.state.app.bot)
        call.emit_comment(comment, "edited", old)
    elif call.method == "DELETE":
        rules.delete(call.state, comment, call.state.app.bot)
        call.emit_comment(comment, "deleted")
        return Response(status_code=204)
    return JSONResponse(review_shapes.review_comment(comment, call.repo, call.state, call.base))


def reaction(call: Call) -> Response:
    comment = call.comment()
    if comment is None:
        return not_found()
    return react(call.state, comment.id, call.body["content"], call.base)


PULL = "/repos/{owner}/{repo}/pulls/{number:int}"
COMMENT = "/repos/{owner}/{repo}/pulls/comments/{comment_id:int}"
routes = [
    Route(f"{PULL}/reviews", _route(None, reviews_collection), methods=["GET"]),
    Route(f"{PULL}/reviews", _route(REVIEW, reviews_collection), methods=["POST"]),
    Route(f"{PULL}/reviews/{{review_id:int}}", _route(None, review_item), methods=["GET"]),
    Route(f"{PULL}/reviews/{{review_id:int}}", _route(BODY, review_item), methods=["PUT"]),
    Route(f"{PULL}/reviews/{{review_id:int}}/dismissals", _route(DISMISSAL, dismissal), methods=["PUT"]),
    Route(f"{PULL}/comments", _route(None, comments_collection), methods=["GET"]),
    Route(f"{PULL}/comments", _route(LINE_COMMENT, comments_collection), methods=["POST"]),
    Route(f"{PULL}/comments/{{comment_id:int}}/replies", _route(BODY, reply), methods=["POST"]),
    Route(COMMENT, _route(None, comment_item), methods=["GET", "DELETE"]),
    Route(COMMENT, _route(BODY, comment_item), methods=["PATCH"]),
    Route(f"{COMMENT}/reactions", _route(REACTION, reaction), methods=["POST"]),
]
