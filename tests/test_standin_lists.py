"""The list parameters a client needs to check whether a create landed: comments `since`, issues by `creator`,
`state`, `sort`, `direction`, `since` and `labels`, paginated with GitHub's Link header."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from standin import StandIn
from standin.state import Repo
from tests.openapi import problems, response_schema

T0 = dt.datetime(2025, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


def at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def stamp(minutes: int) -> str:
    return at(minutes).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_comments_since_filters_on_updated_at_and_paginates(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    for minute in range(6):
        made = gh.comment(repo, pr.number, "bob", f"comment {minute}", deliver=False)
        made.created_at = made.updated_at = at(minute)
    edited = gh.comments_on(repo, pr.number)[0]
    edited.updated_at = at(10)  # an old comment edited late counts as updated then
    url = f"/repos/acme/infra/issues/{pr.number}/comments"

    def bodies(r: httpx.Response) -> list[str]:
        return [c["body"] for c in r.json()]

    assert bodies(api.get(url, params={"since": stamp(3)})) == ["comment 0", "comment 3", "comment 4", "comment 5"]
    assert bodies(api.get(url, params={"since": "2025-03-01T13:03:00+01:00"})) == bodies(
        api.get(url, params={"since": stamp(3)})
    )
    assert bodies(api.get(url, params={"since": stamp(11)})) == []
    first = api.get(url, params={"since": stamp(1), "per_page": 2})
    assert bodies(first) == ["comment 0", "comment 1"] and set(first.links) == {"next", "last"}
    rest = api.get(first.links["next"]["url"])
    assert bodies(rest) == ["comment 2", "comment 3"] and "since=" in first.links["next"]["url"]
    assert bodies(api.get(first.links["last"]["url"])) == ["comment 4", "comment 5"]
    assert problems(first.json(), response_schema("issues/list-comments"), frozenset()) == []
    bad = api.get(url, params={"since": "yesterday"})
    assert bad.status_code == 422
    assert bad.json()["message"] == "The since parameter needs to be in ISO 8601 format: YYYY-MM-DDTHH:MM:SSZ"


@pytest.fixture
def mixed(gh: StandIn, repo: Repo, api: httpx.Client) -> dict[str, int]:
    """Bot issues and human PRs with known times: name -> number."""
    numbers: dict[str, int] = {}
    for minute, title, labels in [(0, "drift dns", ["plangate:drift"]), (2, "blocked", []), (4, "drift net", [])]:
        made = api.post("/repos/acme/infra/issues", json={"title": title, "labels": labels}).json()
        issue = gh.state.issues[(repo.id, made["number"])]
        issue.created_at = issue.updated_at = at(minute)
        numbers[title] = made["number"]
    for minute, head in [(1, "a"), (3, "b")]:
        pr = gh.open_pr(repo, head, "alice", f"PR {head}", {f"{head}.tf": "x"}, deliver=False)
        pr.created_at = pr.updated_at = at(minute)
        numbers[f"PR {head}"] = pr.number
    api.patch(f"/repos/acme/infra/issues/{numbers['blocked']}", json={"state": "closed"})
    gh.state.issues[(repo.id, numbers["blocked"])].updated_at = at(9)
    gh.state.issues[(repo.id, numbers["drift dns"])].updated_at = at(8)
    return numbers


def titles(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [i["title"] for i in r.json()]


def test_issues_by_creator_state_sort_and_direction(api: httpx.Client, mixed: dict[str, int]) -> None:
    url = "/repos/acme/infra/issues"
    assert titles(api.get(url)) == ["drift net", "PR b", "PR a", "drift dns"]  # open, newest first
    mine = {"creator": "plangate[bot]", "state": "all", "sort": "created", "direction": "desc"}
    assert titles(api.get(url, params=mine)) == ["drift net", "blocked", "drift dns"]
    assert titles(api.get(f"{url}?creator=plangate%5Bbot%5D&state=closed")) == ["blocked"]
    assert titles(api.get(url, params={**mine, "direction": "asc"})) == ["drift dns", "blocked", "drift net"]
    assert titles(api.get(url, params={**mine, "sort": "updated"})) == ["blocked", "drift dns", "drift net"]
    assert titles(api.get(url, params={"creator": "ALICE"})) == ["PR b", "PR a"]  # PRs are issues, with pull_request
    assert all("pull_request" in i for i in api.get(url, params={"creator": "alice"}).json())
    assert titles(api.get(url, params={"creator": "nobody"})) == []
    everything = api.get(url, params={"state": "all"}).json()
    assert len(everything) == 5
    assert problems(everything, response_schema("issues/list-for-repo"), frozenset({"Repository"})) == []


def test_issues_since_labels_and_pages(api: httpx.Client, mixed: dict[str, int]) -> None:
    url = "/repos/acme/infra/issues"
    assert titles(api.get(url, params={"state": "all", "since": stamp(4)})) == ["drift net", "blocked", "drift dns"]
    assert titles(api.get(url, params={"labels": "plangate:drift", "since": stamp(8)})) == ["drift dns"]
    assert titles(api.get(url, params={"labels": "plangate:drift", "since": stamp(9)})) == []
    first = api.get(url, params={"state": "all", "per_page": 2, "creator": "plangate[bot]"})
    assert titles(first) == ["drift net", "blocked"]
    assert titles(api.get(first.links["next"]["url"])) == ["drift dns"]
    assert api.get(url, params={"since": "2025-13-01"}).status_code == 422
