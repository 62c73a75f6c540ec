"""Comment edits and deletes as GitHub allows them: by the author or anyone with write access (the App's own
comments included), kept in the comment's history, each sending `issue_comment` `edited`/`deleted`; the App's
own REST edits too. Reactions leave `updated_at` alone."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from standin import StandIn
from standin.state import Comment, PullRequest, Repo

WEBHOOKS = Path(__file__).parent / "fixtures" / "github" / "webhooks"
LONG_AGO = dt.datetime(2025, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


@pytest.fixture
def pr(gh: StandIn, repo: Repo) -> PullRequest:
    return gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# alice\n"}, deliver=False)


@pytest.fixture
def bot_comment(gh: StandIn, pr: PullRequest, api: httpx.Client) -> Comment:
    made = api.post(f"/repos/acme/infra/issues/{pr.number}/comments", json={"body": "plan: 1 to destroy"})
    assert made.status_code == 201
    comment = gh.state.comments[made.json()["id"]]
    comment.updated_at = LONG_AGO
    return comment


def comment_events(gh: StandIn) -> list[dict[str, Any]]:
    gh.wait_for_app_events()
    return [d.payload for d in gh.outbox if d.event == "issue_comment"]


def test_a_writer_edits_then_deletes_the_apps_comment(gh: StandIn, repo: Repo, bot_comment: Comment) -> None:
    gh.set_permission(repo, "bob", "write")
    gh.edit_comment(bot_comment, "plan: nothing to destroy", editor="bob")
    assert bot_comment.updated_at > LONG_AGO and bot_comment.body == "plan: nothing to destroy"
    [edit] = bot_comment.edits
    assert (edit.editor.login, edit.at, edit.body) == ("bob", bot_comment.updated_at, "plan: 1 to destroy")
    gh.delete_comment(bot_comment, deleter="bob")
    assert bot_comment.deletion is not None and bot_comment.deletion.editor.login == "bob"
    assert bot_comment.id not in gh.state.comments
    edited, deleted = comment_events(gh)
    assert (edited["action"], edited["sender"]["login"], edited["changes"]) == (
        "edited",
        "bob",
        {"body": {"from": "plan: 1 to destroy"}},
    )
    assert (
        edited["comment"]["user"]["login"] == "plangate[bot]"
        and edited["comment"]["body"] == "plan: nothing to destroy"
    )
    assert (deleted["action"], deleted["sender"]["login"], deleted["comment"]["id"]) == (
        "deleted",
        "bob",
        bot_comment.id,
    )
    for payload, name in ((edited, "issue_comment.edited"), (deleted, "issue_comment.deleted")):
        template = json.loads((WEBHOOKS / f"{name}.json").read_text())
        assert set(template) <= set(payload) and set(template["comment"]) <= set(payload["comment"])
        assert set(template["issue"]) - {"performed_via_github_app"} <= set(payload["issue"])


@pytest.mark.parametrize("role", [None, "read", "triage"])
def test_nobody_else_may_edit_or_delete(
    gh: StandIn, repo: Repo, pr: PullRequest, bot_comment: Comment, role: str | None
) -> None:
    if role is not None:
        gh.set_permission(repo, "mallory", role)
    mine = gh.comment(repo, pr.number, "carol", "/approve-destroy")
    sent = len(gh.outbox)
    for comment in (bot_comment, mine):
        with pytest.raises(PermissionError):
            gh.edit_comment(comment, "/approve-destroy all", editor="mallory")
        with pytest.raises(PermissionError):
            gh.delete_comment(comment, deleter="mallory")
    assert (bot_comment.body, bot_comment.updated_at, bot_comment.edits) == ("plan: 1 to destroy", LONG_AGO, [])
    assert mine.id in gh.state.comments and len(gh.outbox) == sent
    gh.edit_comment(mine, "/approve-destroy dns")  # carol, who holds no role, may edit her own
    assert [e.editor.login for e in mine.edits] == ["carol"]


@pytest.mark.parametrize("role", ["maintain", "admin"])
def test_maintainers_and_admins_moderate_too(gh: StandIn, repo: Repo, bot_comment: Comment, role: str) -> None:
    gh.set_permission(repo, "dave", role)
    gh.edit_comment(bot_comment, "x", editor="dave")
    gh.delete_comment(bot_comment, deleter="dave")
    assert [e["sender"]["login"] for e in comment_events(gh)] == ["dave", "dave"]


def test_a_reaction_leaves_updated_at(gh: StandIn, pr: PullRequest, bot_comment: Comment, api: httpx.Client) -> None:
    url = f"/repos/acme/infra/issues/comments/{bot_comment.id}"
    assert api.post(f"{url}/reactions", json={"content": "eyes"}).status_code == 201
    shown = api.get(url).json()
    assert shown["updated_at"] == "2025-03-01T12:00:00Z"
    assert (shown["reactions"]["eyes"], shown["reactions"]["total_count"], shown["reactions"]["+1"]) == (1, 1, 0)


def test_the_apps_own_rest_edits_send_webhooks(
    gh: StandIn, repo: Repo, pr: PullRequest, bot_comment: Comment, api: httpx.Client
) -> None:
    url = f"/repos/acme/infra/issues/comments/{bot_comment.id}"
    patched = api.patch(url, json={"body": "plan: updated"})
    assert patched.status_code == 200 and patched.json()["updated_at"] != "2025-03-01T12:00:00Z"
    assert api.delete(url).status_code == 204 and api.get(url).status_code == 404
    edited, deleted = comment_events(gh)
    assert (edited["action"], edited["sender"]["login"], edited["changes"]["body"]["from"]) == (
        "edited",
        "plangate[bot]",
        "plan: 1 to destroy",
    )
    assert (deleted["action"], deleted["sender"]["login"]) == ("deleted", "plangate[bot]")
    assert [e.editor.login for e in bot_comment.edits] == ["plangate[bot]"]


def test_the_app_edits_a_persons_comment_only_with_write(
    gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client
) -> None:
    human = gh.comment(repo, pr.number, "carol", "/approve-destroy")
    url = f"/repos/acme/infra/issues/comments/{human.id}"
    assert api.patch(url, json={"body": "(hidden)"}).status_code == 200
    gh.set_installation_permission(repo, "issues", "read")
    gh.set_installation_permission(repo, "pull_requests", "read")
    refused = api.patch(url, json={"body": "again"})
    assert (refused.status_code, refused.json()["message"]) == (403, "Resource not accessible by integration")
    assert api.delete(url).status_code == 403 and human.body == "(hidden)"


def test_a_new_comment_moves_its_issues_updated_at(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    """As on GitHub: an issue (or PR) shows itself updated when someone comments on it."""
    issue = api.post("/repos/acme/infra/issues", json={"title": "held", "body": "text"}).json()
    gh.state.issues[(repo.id, issue["number"])].updated_at = LONG_AGO
    pr.updated_at = LONG_AGO
    gh.comment(repo, issue["number"], "bob", "/approve-destroy", deliver=False)
    api.post(f"/repos/acme/infra/issues/{pr.number}/comments", json={"body": "reply"})
    assert api.get(f"/repos/acme/infra/issues/{issue['number']}").json()["updated_at"] > "2025-03-01T12:00:00Z"
    assert api.get(f"/repos/acme/infra/pulls/{pr.number}").json()["updated_at"] > "2025-03-01T12:00:00Z"
