"""Everyone who could have put code in a PR, as GitHub tells it: who may push onto a PR's branch, the commit
identities GitHub maps to users or to nobody, a PR's commits (REST, capped at 250), and the repository's
activity (who moved which branch, force pushes included)."""

from __future__ import annotations

import subprocess
from typing import Any

import httpx
import pytest

from standin import Identity, StandIn
from standin.state import PullRequest, Repo

# Required keys of GitHub's "Commit" (pulls/list-commits) and of its `commit`, from the REST description.
COMMIT_KEYS = {"url", "sha", "node_id", "html_url", "comments_url", "commit", "author", "committer", "parents"}
GIT_COMMIT_KEYS = {"url", "author", "committer", "message", "comment_count", "tree"}
USER_KEYS = {"login", "id", "node_id", "avatar_url", "url", "html_url", "type", "site_admin"}


@pytest.fixture
def pr(gh: StandIn, repo: Repo) -> PullRequest:
    return gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# alice\n"}, deliver=False)


def commits_of(api: httpx.Client, pr: PullRequest, **params: Any) -> httpx.Response:
    r = api.get(f"/repos/acme/infra/pulls/{pr.number}/commits", params=params)
    assert r.status_code == 200, r.text
    return r


def login(user: dict[str, Any] | None) -> str | None:
    return None if user is None else str(user["login"])


def test_a_writer_pushes_onto_a_colleagues_pr(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    gh.set_permission(repo, "bob", "write")
    before = pr.head_sha
    after = gh.push_pr(pr, {"main.tf": "# bob\n"}, "Bob's change", pusher="bob")
    sync = gh.outbox[-1].payload
    assert (sync["action"], sync["sender"]["login"], sync["before"], sync["after"]) == (
        "synchronize",
        "bob",
        before,
        after,
    )
    head = commits_of(api, pr).json()[-1]
    assert head["sha"] == after and head["commit"]["message"] == "Bob's change"
    assert (login(head["author"]), login(head["committer"])) == ("bob", "bob")
    assert head["commit"]["author"]["email"] == f"{gh.state.users['bob'].id}+bob@users.noreply.github.com"


@pytest.mark.parametrize("role", [None, "read", "triage"])
def test_who_may_not_push_gets_githubs_403(
    gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client, role: str | None
) -> None:
    if role is not None:
        gh.set_permission(repo, "mallory", role)
    sent, recorded = len(gh.outbox), len(gh.state.activities)
    with pytest.raises(PermissionError, match=r"Permission to acme/infra\.git denied to mallory\."):
        gh.push_pr(pr, {"main.tf": "# mallory\n"}, pusher="mallory")
    assert gh.head(repo, "feature") == pr.head_sha and len(commits_of(api, pr).json()) == 1
    assert (len(gh.outbox), len(gh.state.activities)) == (sent, recorded)


@pytest.mark.parametrize("role", ["write", "maintain", "admin"])
def test_every_writer_may_push_and_the_author_needs_no_role(
    gh: StandIn, repo: Repo, pr: PullRequest, role: str
) -> None:
    gh.set_permission(repo, "carol", role)
    gh.push_pr(pr, {"a.tf": "1"}, pusher="carol", deliver=False)
    gh.push_pr(pr, {"b.tf": "2"}, deliver=False)  # alice, the author, holds no role at all
    assert [a.actor.login for a in gh.state.activities[-2:] if a.actor] == ["carol", "alice"]


def test_a_forks_branch_takes_its_owner_and_maintainers_when_allowed(gh: StandIn, repo: Repo) -> None:
    gh.set_permission(repo, "bob", "write")
    allowed = gh.open_pr(repo, "f1", "mallory", "Fork", {"a.tf": "1"}, fork="mallory/infra", deliver=False)
    closed = gh.open_pr(
        repo, "f2", "mallory", "Fork", {"b.tf": "1"}, fork="mallory/infra", deliver=False, maintainer_can_modify=False
    )
    recorded = len(gh.state.activities)
    gh.push_pr(allowed, {"a.tf": "2"}, deliver=False)
    gh.push_pr(allowed, {"a.tf": "3"}, pusher="bob", deliver=False)
    with pytest.raises(PermissionError, match=r"mallory/infra\.git denied to bob"):
        gh.push_pr(closed, {"b.tf": "2"}, pusher="bob")
    assert len(gh.state.activities) == recorded  # a fork's pushes are the fork's activity, not this repository's
    assert gh.outbox[-1].payload["sender"]["login"] == "bob"
    assert gh.outbox[-1].payload["pull_request"]["maintainer_can_modify"] is True


def test_identities_github_maps_to_nobody_or_to_someone(
    gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client
) -> None:
    gh.set_permission(repo, "bob", "write")
    alice = gh.state.users["alice"]
    ghost = Identity("ghost", "nobody@example.com")
    gh.push_pr(pr, {"a.tf": "1"}, pusher="bob", author=ghost, committer=ghost, deliver=False)
    gh.push_pr(pr, {"b.tf": "1"}, pusher="bob", author=Identity("A", "alice@users.noreply.github.com"), deliver=False)
    gh.push_pr(pr, {"c.tf": "1"}, pusher="bob", author=Identity("A", f"{alice.id + 1}+alice@users.noreply.github.com"))
    gh.push_pr(pr, {"d.tf": "1"}, pusher="bob", author="carol", committer=Identity("GitHub", "noreply@github.com"))
    shown = commits_of(api, pr).json()
    people = [(login(c["author"]), login(c["committer"])) for c in shown]
    assert people == [("alice", "alice"), (None, None), ("alice", "bob"), (None, "bob"), ("carol", "web-flow")]
    written = shown[1]["commit"]
    assert (written["author"]["name"], written["author"]["email"], written["committer"]["email"]) == (
        "ghost",
        ghost.email,
        ghost.email,
    )
    merged = gh.merge_pr(pr, "rebase", deliver=False)
    push = gh.outbox[-1].payload
    assert push["after"] == merged and len(push["commits"]) == 5
    assert "username" not in push["commits"][1]["author"] and push["commits"][1]["author"]["email"] == ghost.email
    assert [c["author"].get("username") for c in push["commits"]] == ["alice", None, "alice", None, "carol"]


def test_pull_commits_shape_order_and_pages(gh: StandIn, repo: Repo, pr: PullRequest, api: httpx.Client) -> None:
    shas = [pr.head_sha] + [gh.push_pr(pr, {f"{n}.tf": "x"}, f"Commit {n}", deliver=False) for n in range(4)]
    assert api.get(f"/repos/acme/infra/pulls/{pr.number}").json()["commits"] == 5
    assert gh.outbox[-1].payload["pull_request"]["commits"] == 5
    first = commits_of(api, pr, per_page=2)
    assert [c["sha"] for c in first.json()] == shas[:2] and set(first.links) == {"next", "last"}
    assert [c["sha"] for c in api.get(first.links["next"]["url"]).json()] == shas[2:4]
    assert [c["sha"] for c in api.get(first.links["last"]["url"]).json()] == shas[4:]
    assert [c["sha"] for c in commits_of(api, pr).json()] == shas and "link" not in commits_of(api, pr).headers
    one = first.json()[1]
    assert set(one) >= COMMIT_KEYS and set(one["commit"]) >= GIT_COMMIT_KEYS and set(one["author"]) >= USER_KEYS
    assert one["parents"][0]["sha"] == shas[0] and one["commit"]["message"] == "Commit 0"
    assert (login(one["author"]), login(one["committer"])) == ("alice", "alice")
    assert one["commit"]["tree"]["sha"] == git(repo, "rev-parse", f"{shas[1]}^{{tree}}")
    assert one["commit"]["author"]["date"].endswith("Z") and one["url"].endswith(f"/commits/{shas[1]}")
    assert api.get("/repos/acme/infra/pulls/999/commits").status_code == 404


def git(repo: Repo, *args: str, stdin: str | None = None) -> str:
    run = subprocess.run(["git", "--git-dir", str(repo.path), *args], input=stdin, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def many_commits(repo: Repo, branch: str, parent: str, count: int) -> None:
    """`count` commits on `branch` in one `git fast-import` (one process, not one per commit)."""
    stream = []
    for n in range(count):
        stamp = f"dev <dev@example.com> {1_700_000_000 + n} +0000"
        stream += [f"commit refs/heads/{branch}", f"mark :{n + 1}", f"author {stamp}", f"committer {stamp}"]
        stream += [f"data {len(f'c{n}')}", f"c{n}", f"from {parent}" if n == 0 else f"from :{n}"]
        stream += ["M 100644 inline n.txt", f"data {len(str(n))}", str(n)]
    git(repo, "fast-import", "--quiet", stdin="\n".join(stream) + "\n")


def test_a_pr_lists_its_first_250_commits_but_counts_all(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    many_commits(repo, "big", str(gh.head(repo, "main")), 260)
    pr = gh.open_pr(repo, "big", "alice", "Big", deliver=False)
    assert api.get(f"/repos/acme/infra/pulls/{pr.number}").json()["commits"] == 260
    pages = [commits_of(api, pr, per_page=100, page=n) for n in (1, 2, 3, 4)]
    assert [len(p.json()) for p in pages] == [100, 100, 50, 0]
    assert pages[0].links["last"]["url"].endswith("page=3")
    assert [c["commit"]["message"] for c in pages[2].json()][-1] == "c249"  # the oldest 250, oldest first
    assert len(commits_of(api, pr, per_page=500).json()) == 100
