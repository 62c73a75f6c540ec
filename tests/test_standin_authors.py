"""Everyone who could have put code in a PR, as GitHub tells it: a PR's commits (REST, capped at 250), with
the users GitHub maps their author and committer emails to."""

from __future__ import annotations

import subprocess
from typing import Any

import httpx
import pytest

from standin import StandIn
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
