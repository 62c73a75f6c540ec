"""Reviews and review comments as GitHub has them: REST answers in the published shapes, webhooks shaped like the
published examples, who may approve, comment, edit and dismiss, and replies landing in their thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from standin import StandIn
from standin.reviews import ReviewComment
from standin.state import PullRequest, Repo
from tests.openapi import problems, response_schema

WEBHOOKS = Path(__file__).parent / "fixtures" / "github" / "webhooks"
LENIENT = frozenset({"Repository"})  # the stand-in's repositories carry the fields plangate reads, not all of them
FILES = {"main.tf": 'resource "terraform_data" "a" {}\nresource "terraform_data" "b" {}\n'}


@pytest.fixture
def pr(gh: StandIn, repo: Repo) -> PullRequest:
    return gh.open_pr(repo, "feature", "alice", "Change", FILES, deliver=False)


def events(gh: StandIn, *names: str) -> list[dict[str, Any]]:
    gh.wait_for_app_events()
    return [d.payload for d in gh.outbox if d.event in names]


def webhook_schema(name: str) -> dict[str, Any]:
    spec = json.loads((WEBHOOKS / "schemas" / f"{name}.schema.json").read_text())
    schema: dict[str, Any] = spec["requestBody"]["content"]["application/json"]["schema"]
    return schema


def missing_keys(template: Any, sent: Any, path: str = "$") -> list[str]:
    """Keys of the published example that the stand-in's payload lacks, at any depth both share."""
    if not isinstance(template, dict) or not isinstance(sent, dict):
        return []
    found = [f"{path}.{key}" for key in template if key not in sent]
    return found + [
        p for key in template if key in sent for p in missing_keys(template[key], sent[key], f"{path}.{key}")
    ]


def check_payload(payload: dict[str, Any], name: str, example: str | None = None) -> None:
    assert problems(payload, webhook_schema(name), LENIENT) == []
    if example is not None:
        template = json.loads((WEBHOOKS / f"{example}.json").read_text())
        for key in ("review", "comment", "sender"):
            assert missing_keys(template.get(key), payload.get(key)) == []
        assert set(template) - {"organization"} <= set(payload)


def test_rest_shapes_are_githubs(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    url = f"/repos/acme/infra/pulls/{pr.number}"
    made = api.post(f"{url}/reviews", json={"body": "looks right", "event": "COMMENT"})
    assert made.status_code == 200 and problems(made.json(), response_schema("pulls/create-review"), LENIENT) == []
    review = made.json()
    assert (review["state"], review["commit_id"], review["body"]) == ("COMMENTED", pr.head_sha, "looks right")
    assert review["html_url"].endswith(f"/acme/infra/pull/{pr.number}#pullrequestreview-{review['id']}")
    listed = api.get(f"{url}/reviews").json()
    assert listed == [review] and problems(listed, response_schema("pulls/list-reviews"), LENIENT) == []
    one = f"{url}/reviews/{review['id']}"
    assert api.get(one).json() == review
    edited = api.put(one, json={"body": "looks right to me"})
    assert problems(edited.json(), response_schema("pulls/update-review"), LENIENT) == []
    line = {"body": "why two?", "commit_id": pr.head_sha, "path": "main.tf", "line": 2}
    comment = api.post(f"{url}/comments", json=line)
    assert comment.status_code == 201, comment.text
    shown = comment.json()
    assert problems(shown, response_schema("pulls/create-review-comment", "201"), LENIENT) == []
    assert (shown["path"], shown["line"], shown["side"], shown["commit_id"]) == ("main.tf", 2, "RIGHT", pr.head_sha)
    assert shown["diff_hunk"].startswith("@@ ") and shown["diff_hunk"].endswith('+resource "terraform_data" "b" {}')
    assert "in_reply_to_id" not in shown  # GitHub leaves it out on a thread's first comment
    reply = api.post(f"{url}/comments/{shown['id']}/replies", json={"body": "for b"})
    assert reply.status_code == 201
    assert problems(reply.json(), response_schema("pulls/create-reply-for-review-comment", "201"), LENIENT) == []
    listed = api.get(f"{url}/comments").json()
    assert problems(listed, response_schema("pulls/list-review-comments"), LENIENT) == []
    assert [c["id"] for c in listed] == [shown["id"], reply.json()["id"]]
    item = f"/repos/acme/infra/pulls/comments/{shown['id']}"
    assert problems(api.get(item).json(), response_schema("pulls/get-review-comment"), LENIENT) == []
    reacted = api.post(f"{item}/reactions", json={"content": "eyes"})
    assert reacted.status_code == 201
    schema = response_schema("reactions/create-for-pull-request-review-comment", "201")
    assert problems(reacted.json(), schema, LENIENT) == []
    patched = api.patch(item, json={"body": "why two resources?"})
    assert problems(patched.json(), response_schema("pulls/update-review-comment"), LENIENT) == []
    assert patched.json()["reactions"]["eyes"] == 1
    assert api.delete(item).status_code == 204 and api.get(item).status_code == 404


def test_webhooks_are_shaped_like_githubs(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    gh.set_permission(repo, "bob", "write")
    approval = gh.review(repo, pr.number, "bob", "ship it", "APPROVE")
    gh.edit_review(approval, "ship it now")
    gh.dismiss_review(approval, "bob", "stale")
    first = gh.review_comment(repo, pr.number, "carol", "why?", path="main.tf", line=1)
    gh.edit_review_comment(first, "why this?")
    reply = gh.review_comment(repo, pr.number, "bob", "because", in_reply_to=first)
    gh.delete_review_comment(reply)
    reviews = events(gh, "pull_request_review")
    assert [(e["action"], e["review"]["state"]) for e in reviews] == [
        ("submitted", "approved"),
        ("edited", "approved"),
        ("dismissed", "dismissed"),
        ("submitted", "commented"),
        ("submitted", "commented"),
    ]
    submitted, edited, dismissed, implicit, _ = reviews
    check_payload(submitted, "pull_request_review.submitted", "pull_request_review.submitted")
    check_payload(edited, "pull_request_review.edited")
    check_payload(dismissed, "pull_request_review.dismissed", "pull_request_review.dismissed")
    assert edited["changes"] == {"body": {"from": "ship it"}} and dismissed["sender"]["login"] == "bob"
    assert (submitted["review"]["commit_id"], submitted["review"]["submitted_at"]) == (
        pr.head_sha,
        approval.submitted_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    assert submitted["pull_request"]["number"] == pr.number and submitted["pull_request"]["head"]["sha"] == pr.head_sha
    assert (implicit["review"]["body"], implicit["review"]["id"]) == (None, first.pull_request_review_id)
    comments = events(gh, "pull_request_review_comment")
    assert [e["action"] for e in comments] == ["created", "edited", "created", "deleted"]
    for payload, action in zip(comments, ("created", "edited", "created", "deleted"), strict=True):
        check_payload(payload, f"pull_request_review_comment.{action}", f"pull_request_review_comment.{action}")
    assert comments[1]["changes"] == {"body": {"from": "why?"}} and comments[1]["comment"]["body"] == "why this?"
    made = comments[2]["comment"]
    assert (made["in_reply_to_id"], made["pull_request_review_id"]) == (first.id, reply.pull_request_review_id)


def test_a_reader_comments_on_lines_but_cannot_approve(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    gh.set_permission(repo, "rita", "read")
    for login in ("rita", "stranger"):  # a public repository: anyone may comment on lines
        gh.review_comment(repo, pr.number, login, "nit", path="main.tf", line=1)
        gh.review(repo, pr.number, login, "a thought", "COMMENT")
        for event in ("APPROVE", "REQUEST_CHANGES"):
            with pytest.raises(PermissionError):
                gh.review(repo, pr.number, login, "no", event)
    assert {r.state for r in gh.reviews(repo, pr.number)} == {"COMMENTED"}


def test_a_private_repository_needs_a_role(gh: StandIn, pr: PullRequest) -> None:
    hidden = gh.create_repo("acme", "secret", FILES, private=True)
    hidden_pr = gh.open_pr(hidden, "feature", "alice", "Change", {"main.tf": "# x\n"}, deliver=False)
    with pytest.raises(PermissionError):
        gh.review_comment(hidden, hidden_pr.number, "stranger", "hi", path="main.tf")
    gh.set_permission(hidden, "rita", "read")
    gh.review_comment(hidden, hidden_pr.number, "rita", "hi", path="main.tf")


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("APPROVE", "Can not approve your own pull request"),
        ("REQUEST_CHANGES", "Can not request changes on your own pull request"),
    ],
)
def test_the_author_cannot_approve_their_own_pr(
    gh: StandIn, repo: Repo, pr: PullRequest, event: str, message: str
) -> None:
    gh.set_permission(repo, "alice", "admin")
    with pytest.raises(ValueError, match=message):
        gh.review(repo, pr.number, "alice", "mine", event)
    gh.review(repo, pr.number, "alice", "a note on my own PR")


def test_writers_approve_and_the_app_with_pull_requests_write(
    gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client
) -> None:
    gh.set_permission(repo, "bob", "maintain")
    assert gh.review(repo, pr.number, "bob", event="APPROVE").state == "APPROVED"
    url = f"/repos/acme/infra/pulls/{pr.number}/reviews"
    assert api.post(url, json={"event": "APPROVE"}).json()["state"] == "APPROVED"
    gh.set_installation_permission(repo, "pull_requests", "read")
    refused = api.post(url, json={"event": "APPROVE"})
    assert (refused.status_code, refused.json()["message"]) == (403, "Resource not accessible by integration")
    assert len(api.get(url).json()) == 2  # reading needs only read


def test_replies_land_in_the_threads_first_comment(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    first = gh.review_comment(repo, pr.number, "carol", "why?", path="main.tf", line=2)
    other = gh.review_comment(repo, pr.number, "dave", "and this?", path="main.tf", line=1)
    answer = gh.review_comment(repo, pr.number, "bob", "because", in_reply_to=first)
    again = gh.review_comment(repo, pr.number, "carol", "ok", in_reply_to=answer)  # a reply to a reply
    assert (answer.in_reply_to_id, again.in_reply_to_id, other.in_reply_to_id) == (first.id, first.id, None)
    assert {(c.path, c.line, c.commit_id) for c in (answer, again)} == {("main.tf", 2, pr.head_sha)}
    url = f"/repos/acme/infra/pulls/{pr.number}/comments"
    by_app = api.post(f"{url}/{again.id}/replies", json={"body": "plan: no changes"})
    assert by_app.status_code == 201 and by_app.json()["in_reply_to_id"] == first.id
    assert by_app.json()["user"]["login"] == "plangate[bot]"
    thread = [c.id for c in gh.review_comments(repo, pr.number) if first.id in (c.id, c.in_reply_to_id)]
    assert thread == [first.id, answer.id, again.id, by_app.json()["id"]]
    via_create = api.post(url, json={"body": "too", "commit_id": pr.head_sha, "path": "x", "in_reply_to": other.id})
    assert via_create.status_code == 201 and via_create.json()["in_reply_to_id"] == other.id
    elsewhere = gh.open_pr(repo, "other", "erin", "Other", {"b.tf": "# b\n"}, deliver=False)
    wrong = api.post(f"/repos/acme/infra/pulls/{elsewhere.number}/comments/{first.id}/replies", json={"body": "x"})
    assert wrong.status_code == 404
    reviews = gh.reviews(repo, pr.number)
    assert all(r.state == "COMMENTED" and r.body == "" for r in reviews) and len(reviews) == 6  # one per comment


def test_dismissals(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    gh.set_permission(repo, "bob", "write")
    gh.set_permission(repo, "rita", "triage")
    approval = gh.review(repo, pr.number, "bob", event="APPROVE")
    blocking = gh.review(repo, pr.number, "bob", "not yet", "REQUEST_CHANGES")
    note = gh.review(repo, pr.number, "rita", "hm", "COMMENT")
    with pytest.raises(PermissionError):
        gh.dismiss_review(approval, "rita")
    with pytest.raises(ValueError, match="Can not dismiss a commented pull request review"):
        gh.dismiss_review(note, "bob")
    gh.dismiss_review(blocking, "bob", "addressed")
    assert blocking.state == "DISMISSED"
    with pytest.raises(ValueError):
        gh.dismiss_review(blocking, "bob")
    url = f"/repos/acme/infra/pulls/{pr.number}/reviews"
    dismissed = api.put(f"{url}/{approval.id}/dismissals", json={"message": "new commits"})
    assert dismissed.status_code == 200 and dismissed.json()["state"] == "DISMISSED"
    assert problems(dismissed.json(), response_schema("pulls/dismiss-review"), LENIENT) == []
    refused = api.put(f"{url}/{note.id}/dismissals", json={"message": "x"})
    assert refused.status_code == 422
    assert problems(refused.json(), response_schema("pulls/dismiss-review", "422"), frozenset()) == []
    assert refused.json()["errors"] == ["Can not dismiss a commented pull request review"]
    assert api.put(f"{url}/999999/dismissals", json={"message": "x"}).status_code == 404
    assert api.put(f"{url}/{note.id}/dismissals", json={}).status_code == 422
    last = events(gh, "pull_request_review")[-1]
    assert (last["action"], last["review"]["state"], last["sender"]["login"]) == (
        "dismissed",
        "dismissed",
        "plangate[bot]",
    )


def test_edits_by_the_author_or_a_writer(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    gh.set_permission(repo, "rita", "read")
    gh.set_permission(repo, "bob", "write")
    comment: ReviewComment = gh.review_comment(repo, pr.number, "carol", "why?", path="main.tf")
    review = gh.review(repo, pr.number, "carol", "notes", "COMMENT")
    before = comment.updated_at
    with pytest.raises(PermissionError):
        gh.edit_review_comment(comment, "x", editor="rita")
    with pytest.raises(PermissionError):
        gh.edit_review(review, "x", editor="rita")
    gh.edit_review_comment(comment, "why this?", editor="bob")
    gh.edit_review(review, "my notes")
    assert [(e.editor.login, e.body) for e in comment.edits] == [("bob", "why?")] and comment.updated_at >= before
    assert [(e.editor.login, e.body) for e in review.edits] == [("carol", "notes")]


def test_rest_refusals(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    url = f"/repos/acme/infra/pulls/{pr.number}"
    outside = {"body": "x", "commit_id": pr.head_sha, "path": "main.tf", "line": 40}
    refused = api.post(f"{url}/comments", json=outside)
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "pull_request_review_thread.line"
    assert api.post(f"{url}/comments", json={"body": "x", "path": "main.tf", "line": 1}).status_code == 422
    empty = api.post(f"{url}/reviews", json={"event": "REQUEST_CHANGES"})
    assert (
        empty.status_code == 422
        and problems(empty.json(), response_schema("pulls/create-review", "422"), frozenset()) == []
    )
    assert api.get("/repos/acme/infra/pulls/99/reviews").status_code == 404
    assert api.get("/repos/acme/infra/pulls/comments/99").status_code == 404
