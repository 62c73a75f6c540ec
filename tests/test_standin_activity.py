"""`GET /repos/{owner}/{repo}/activity`: every branch the stand-in changes is recorded with who changed it, and
listed, filtered and paged as GitHub documents ("List repository activities", REST 2022-11-28)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import httpx

from standin import StandIn
from standin.state import Repo

ACTIVITY_KEYS = {"id", "node_id", "before", "after", "ref", "timestamp", "activity_type", "actor"}
ZERO = "0" * 40


def listed(api: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    r = api.get("/repos/acme/infra/activity", params=params)
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()
    return items


def summary(items: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(a["activity_type"], a["ref"], a["actor"]["login"] if a["actor"] else None) for a in items]


def test_every_branch_change_is_recorded_with_its_actor(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    created = gh.head(repo, "main")
    gh.set_permission(repo, "bob", "write")
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"a.tf": "1"}, deliver=False)
    first = pr.head_sha
    pushed = gh.push_pr(pr, {"b.tf": "1"}, pusher="bob", deliver=False)
    forced = gh.force_push_pr(pr, {"c.tf": "1"}, pusher="bob", deliver=False)
    direct = gh.push(repo, "main", {"d.tf": "1"}, pusher="carol", deliver=False)
    merged = gh.merge_pr(pr, merged_by="dave", deliver=False)
    assert summary(listed(api, direction="asc")) == [
        ("branch_creation", "refs/heads/main", "acme"),
        ("branch_creation", "refs/heads/feature", "alice"),
        ("push", "refs/heads/feature", "bob"),
        ("force_push", "refs/heads/feature", "bob"),
        ("push", "refs/heads/main", "carol"),
        ("pr_merge", "refs/heads/main", "dave"),
    ]
    items = listed(api)
    assert [a["activity_type"] for a in items][:2] == ["pr_merge", "push"]  # newest first by default
    moves = [(a["before"], a["after"]) for a in reversed(items)]
    assert moves == [
        (ZERO, created),
        (ZERO, first),
        (first, pushed),
        (pushed, forced),
        (created, direct),
        (direct, merged),
    ]
    assert all(set(a) == ACTIVITY_KEYS for a in items) and items[0]["actor"]["type"] == "User"
    assert dt.datetime.fromisoformat(items[0]["timestamp"]).tzinfo is not None and items[0]["timestamp"].endswith("Z")
    assert [c["sha"] for c in api.get(f"/repos/acme/infra/pulls/{pr.number}/commits").json()] == [forced]


def test_the_merge_queue_creates_merges_and_deletes_its_branch(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"a.tf": "1"}, deliver=False)
    group = gh.queue_merge_group(repo, [pr], deliver=False)
    gh.merge_group_done(group, "merged", deliver=False)
    queue = f"refs/heads/{group.head_ref}"
    assert summary(listed(api, direction="asc"))[2:] == [
        ("branch_creation", queue, "github-merge-queue[bot]"),
        ("merge_queue_merge", "refs/heads/main", "github-merge-queue[bot]"),
        ("branch_deletion", queue, "github-merge-queue[bot]"),
    ]
    assert (listed(api, activity_type="branch_deletion")[0]["before"], listed(api)[0]["after"]) == (
        group.head_sha,
        ZERO,
    )


def test_filters_by_ref_actor_type_and_time(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    gh.push(repo, "main", {"a.tf": "1"}, pusher="alice", deliver=False)
    gh.push(repo, "dev", {"b.tf": "1"}, pusher="Bob", deliver=False)
    gh.push(repo, "dev", {"c.tf": "1"}, pusher="alice", deliver=False)
    assert summary(listed(api, ref="dev")) == summary(listed(api, ref="refs/heads/dev"))
    assert summary(listed(api, ref="dev")) == [
        ("push", "refs/heads/dev", "alice"),
        ("branch_creation", "refs/heads/dev", "Bob"),
    ]
    assert summary(listed(api, actor="bob")) == [("branch_creation", "refs/heads/dev", "Bob")]
    assert summary(listed(api, actor="alice", activity_type="push")) == [
        ("push", "refs/heads/dev", "alice"),
        ("push", "refs/heads/main", "alice"),
    ]
    old = gh.state.activities[1]  # alice's push to main, made 3 days ago
    gh.state.activities[1] = dataclasses.replace(old, timestamp=old.timestamp - dt.timedelta(days=3))
    assert len(listed(api, time_period="day")) == 3 and len(listed(api, time_period="week")) == 4
    assert listed(api, ref="nope") == [] and listed(api, actor="nobody") == []


def test_unknown_values_are_a_validation_failure(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    for params in ({"direction": "up"}, {"time_period": "hour"}, {"activity_type": "merge"}, {"after": "xyz"}):
        r = api.get("/repos/acme/infra/activity", params=params)
        assert r.status_code == 422 and r.json()["message"] == "Validation Failed"
        assert isinstance(r.json()["errors"][0], str)
    assert api.get("/repos/acme/other/activity").status_code == 404


def test_cursors_walk_every_page_both_ways(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    for n in range(6):
        gh.push(repo, "main", {f"{n}.tf": "x"}, pusher="alice", deliver=False)
    everything = [a["id"] for a in listed(api)]
    assert len(everything) == 7
    first = api.get("/repos/acme/infra/activity", params={"per_page": 3})
    assert [a["id"] for a in first.json()] == everything[:3] and set(first.links) == {"next"}
    assert "page=" not in first.links["next"]["url"].replace("per_page=", "")
    second = api.get(first.links["next"]["url"])
    assert [a["id"] for a in second.json()] == everything[3:6] and set(second.links) == {"next", "prev"}
    third = api.get(second.links["next"]["url"])
    assert [a["id"] for a in third.json()] == everything[6:] and set(third.links) == {"prev"}
    back = api.get(third.links["prev"]["url"])
    assert [a["id"] for a in back.json()] == everything[3:6]
    assert [a["id"] for a in api.get(back.links["prev"]["url"]).json()] == everything[:3]
    ascending = api.get("/repos/acme/infra/activity", params={"per_page": 4, "direction": "asc"})
    rest = api.get(ascending.links["next"]["url"])
    assert [a["id"] for a in ascending.json() + rest.json()] == everything[::-1]
    assert "direction=asc" in ascending.links["next"]["url"]
    assert len(listed(api, per_page=1000)) == 7
