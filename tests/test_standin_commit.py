"""`GET /repos/{owner}/{repo}/commits/{sha}`: one commit, with the logins of its author and committer (what
`/apply` counts as the authors of the apply branch's head)."""

from __future__ import annotations

import httpx

from standin import StandIn
from standin.state import Repo


def test_a_commit_names_its_author_and_committer(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    root = gh.head(repo, "main")
    sha = gh.commit(repo, "main", {"main.tf": "# changed\n"}, author="carol")
    found = api.get(f"/repos/acme/infra/commits/{sha}").json()
    assert found["sha"] == sha and [p["sha"] for p in found["parents"]] == [root]
    assert (found["author"]["login"], found["committer"]["login"]) == ("carol", "carol")
    first = api.get(f"/repos/acme/infra/commits/{root}").json()  # a root commit has no parent
    assert first["sha"] == root and first["parents"] == []


def test_an_unknown_commit_is_refused(api: httpx.Client) -> None:
    assert api.get("/repos/acme/infra/commits/" + "0" * 40).status_code == 422
