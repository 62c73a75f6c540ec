"""The GitHub stand-in behaves like GitHub where the bot depends on it: auth, limits, git, webhooks."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gidgethub
import gidgethub.sansio
import httpx
import pytest
from gidgethub import apps
from gidgethub.httpx import GitHubAPI

from standin import StandIn, gitops, start
from standin.auth import EXPIRED, IAT_FUTURE, TOO_LONG, UNDECODABLE
from standin.state import Repo
from tests.standin_client import SECRET, Receiver, app_jwt, client, make_key, mint

FIXTURES = Path(__file__).parent / "fixtures" / "github" / "webhooks"


@pytest.fixture(scope="module")
def other_key() -> str:
    return make_key()


@pytest.fixture
def gh(tmp_path: Path, key: str, receiver: Receiver) -> Iterator[StandIn]:
    standin = StandIn(tmp_path / "git", key, app_id=4242, webhook_url=receiver.url, webhook_secret=SECRET)
    with start(standin):
        yield standin


@pytest.fixture
def repo(gh: StandIn) -> Repo:
    return gh.create_repo("acme", "infra", {"main.tf": 'resource "terraform_data" "a" {}\n', "README.md": "hi\n"})


# -- App JWT ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("iss", [4242, "4242"])
def test_valid_jwt_reads_the_app(gh: StandIn, key: str, iss: Any) -> None:
    with client(gh, f"Bearer {app_jwt(key, iss=iss)}") as c:
        r = c.get("/app")
    assert r.status_code == 200
    assert r.json()["slug"] == "plangate" and r.json()["id"] == 4242


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"iat_delta": -700, "exp_delta": -100}, EXPIRED),
        ({"iat_delta": 120, "exp_delta": 500}, IAT_FUTURE),
        ({"iat_delta": -60, "exp_delta": 600}, TOO_LONG),
        ({"iss": 99}, "Integration not found"),
        ({"iss": "plangate"}, "'Issuer' claim ('iss') must be an Integer"),
    ],
)
def test_bad_jwt_is_401(gh: StandIn, key: str, kwargs: dict[str, Any], message: str) -> None:
    with client(gh, f"Bearer {app_jwt(key, **kwargs)}") as c:
        r = c.get("/app/installations")
    assert r.status_code == 401
    assert r.json()["message"] == message
    assert r.json()["documentation_url"].startswith("https://docs.github.com/")


def test_jwt_signed_by_another_key_is_401(gh: StandIn, other_key: str) -> None:
    with client(gh, f"Bearer {app_jwt(other_key)}") as c:
        assert c.get("/app").json()["message"] == UNDECODABLE


# -- installation tokens -----------------------------------------------------------------------------


def test_token_is_long_expires_in_an_hour_and_opens_the_repo(gh: StandIn, key: str, repo: Repo) -> None:
    with client(gh, f"Bearer {app_jwt(key)}") as c:
        r = c.post(f"/app/installations/{repo.installation_id}/access_tokens")
    body = r.json()
    assert body["token"].startswith("ghs_") and len(body["token"]) > 40
    expires = dt.datetime.strptime(body["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert dt.timedelta(minutes=59) < expires - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=1)
    with client(gh, f"token {body['token']}") as c:
        listed = c.get("/installation/repositories").json()
    assert [x["full_name"] for x in listed["repositories"]] == ["acme/infra"]
    with client(gh, f"Bearer {body['token']}") as c:
        assert c.get("/installation/repositories").status_code == 200


def test_expired_token_missing_and_bad_auth(gh: StandIn, key: str, repo: Repo) -> None:
    gh.state.token_ttl = dt.timedelta(0)
    expired = mint(gh, key, repo)
    with client(gh, f"token {expired}") as c:
        r = c.get("/repos/acme/infra/issues")
    assert (r.status_code, r.json()["message"]) == (401, "Bad credentials")
    with client(gh) as c:
        r = c.get("/repos/acme/infra/issues")
    assert (r.status_code, r.json()["message"]) == (401, "Requires authentication")
    with client(gh, "token ghs_" + "x" * 60) as c:
        assert c.get("/repos/acme/infra/issues").status_code == 401


def test_jwt_and_token_are_not_interchangeable(gh: StandIn, key: str, repo: Repo) -> None:
    token = mint(gh, key, repo)
    with client(gh, f"Bearer {app_jwt(key)}") as c:
        assert c.get("/repos/acme/infra/issues").status_code == 403
        installation = c.get("/repos/acme/infra/installation")
    assert installation.status_code == 200 and installation.json()["id"] == repo.installation_id
    with client(gh, f"token {token}") as c:
        assert c.get("/repos/acme/infra/installation").status_code == 401
        assert c.get("/app").status_code == 401


def test_token_of_another_installation_sees_404(gh: StandIn, key: str, repo: Repo) -> None:
    gh.create_repo("other", "thing", {"a": "b"})
    token = mint(gh, key, repo)
    with client(gh, f"token {token}") as c:
        assert c.get("/repos/other/thing/issues").status_code == 404


# -- comments, reactions, issues ---------------------------------------------------------------------


def test_comment_body_limit_and_bot_author(gh: StandIn, key: str, repo: Repo) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        too_long = c.post(f"/repos/acme/infra/issues/{pr.number}/comments", json={"body": "x" * 65537})
        assert too_long.status_code == 422
        assert too_long.json()["message"] == "Validation Failed"
        assert too_long.json()["errors"] == [
            {
                "resource": "IssueComment",
                "code": "custom",
                "field": "body",
                "message": "body is too long (maximum is 65536 characters)",
            }
        ]
        ok = c.post(f"/repos/acme/infra/issues/{pr.number}/comments", json={"body": "x" * 65536})
        assert ok.status_code == 201
        made = ok.json()
        assert made["user"] == {**made["user"], "login": "plangate[bot]", "type": "Bot"}
        url = f"/repos/acme/infra/issues/comments/{made['id']}"
        assert c.patch(url, json={"body": "y" * 65537}).status_code == 422
        assert c.patch(url, json={"body": "short"}).json()["body"] == "short"
        assert c.post(f"{url}/reactions", json={"content": "eyes"}).status_code == 201
        assert c.post(f"{url}/reactions", json={"content": "eyes"}).status_code == 200
        assert c.delete(url).status_code == 204
        assert c.get(url).status_code == 404


def test_comment_pagination_link_header(gh: StandIn, key: str, repo: Repo) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    for i in range(75):
        gh.comment(repo, pr.number, "bob", f"comment {i}", deliver=False)
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        first = c.get(f"/repos/acme/infra/issues/{pr.number}/comments", params={"per_page": 30})
        assert len(first.json()) == 30
        assert set(first.links) == {"next", "last"}
        assert "page=3" in first.links["last"]["url"]
        last = c.get(first.links["last"]["url"])
    assert [x["body"] for x in last.json()] == [f"comment {i}" for i in range(60, 75)]
    assert set(last.links) == {"prev", "first"}


def test_issues_created_filtered_by_label_and_closed(gh: StandIn, key: str, repo: Repo) -> None:
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        made = c.post("/repos/acme/infra/issues", json={"title": "Drift", "labels": ["plangate:drift"]})
        assert made.status_code == 201
        c.post("/repos/acme/infra/issues", json={"title": "Other"})
        found = c.get("/repos/acme/infra/issues", params={"labels": "plangate:drift"}).json()
        assert [i["title"] for i in found] == ["Drift"]
        number = made.json()["number"]
        closed = c.patch(f"/repos/acme/infra/issues/{number}", json={"state": "closed"})
        assert closed.json()["state"] == "closed"
        assert c.get("/repos/acme/infra/issues", params={"labels": "plangate:drift"}).json() == []


# -- permissions -------------------------------------------------------------------------------------


def test_permissions_and_teams(gh: StandIn, key: str, repo: Repo) -> None:
    gh.set_permission(repo, "writer", "write")
    gh.set_permission(repo, "keeper", "maintain")
    gh.set_permission(repo, "gone", "none")
    gh.add_user("stranger")
    gh.add_team_member("acme", "infra-admins", "keeper")
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        url = "/repos/acme/infra/collaborators/{}/permission"
        writer = c.get(url.format("writer")).json()
        assert (writer["permission"], writer["role_name"], writer["user"]["login"]) == ("write", "write", "writer")
        keeper = c.get(url.format("keeper")).json()
        assert (keeper["permission"], keeper["role_name"]) == ("write", "maintain")
        assert c.get(url.format("acme")).json()["permission"] == "admin"
        assert c.get(url.format("stranger")).status_code == 404
        assert c.get(url.format("gone")).status_code == 404
        member = c.get("/orgs/acme/teams/infra-admins/memberships/keeper")
        assert member.status_code == 200 and member.json()["state"] == "active"
        assert c.get("/orgs/acme/teams/infra-admins/memberships/writer").status_code == 404


# -- statuses ----------------------------------------------------------------------------------------


def test_statuses_need_a_full_existing_sha(gh: StandIn, key: str, repo: Repo) -> None:
    sha = gh.head(repo, "main")
    assert sha is not None
    status = {"state": "pending", "context": "plangate/plan", "description": "Planning"}
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        assert c.post(f"/repos/acme/infra/statuses/{sha[:7]}", json=status).status_code == 422
        assert c.post(f"/repos/acme/infra/statuses/{'a' * 40}", json=status).status_code == 422
        long = c.post(f"/repos/acme/infra/statuses/{sha}", json={**status, "description": "d" * 141})
        assert long.status_code == 422 and long.json()["errors"][0]["field"] == "description"
        made = c.post(f"/repos/acme/infra/statuses/{sha}", json=status)
        assert made.status_code == 201 and made.json()["creator"]["login"] == "plangate[bot]"
        c.post(f"/repos/acme/infra/statuses/{sha}", json={**status, "state": "success"})
        c.post(f"/repos/acme/infra/statuses/{sha}", json={**status, "context": "plangate/destroy", "state": "failure"})
        combined = c.get("/repos/acme/infra/commits/main/status").json()
    assert combined["sha"] == sha and combined["state"] == "failure" and combined["total_count"] == 2
    assert {s["context"]: s["state"] for s in combined["statuses"]} == {
        "plangate/plan": "success",
        "plangate/destroy": "failure",
    }
    assert gh.statuses(repo, sha)["plangate/plan"].state == "success"


# -- pulls -------------------------------------------------------------------------------------------


def test_pull_and_its_files(gh: StandIn, key: str, repo: Repo) -> None:
    pr = gh.open_pr(
        repo, "feature", "alice", "Change", {"main.tf": "# changed\n", "README.md": None, "dns/x.tf": ""}, deliver=False
    )
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        got = c.get(f"/repos/acme/infra/pulls/{pr.number}").json()
        files = c.get(f"/repos/acme/infra/pulls/{pr.number}/files", params={"per_page": 2})
        rest = c.get(files.links["next"]["url"]).json()
    assert got["head"]["sha"] == pr.head_sha and got["head"]["ref"] == "feature"
    assert got["base"]["ref"] == "main" and got["state"] == "open" and got["changed_files"] == 3
    assert got["merge_commit_sha"] not in (None, pr.head_sha)  # a test merge, not the head
    statuses = {f["filename"]: f["status"] for f in [*files.json(), *rest]}
    assert statuses == {"README.md": "removed", "dns/x.tf": "added", "main.tf": "modified"}


def test_a_moved_base_can_leave_mergeability_unknown_for_a_few_reads(gh: StandIn, key: str, repo: Repo) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    old = pr.merge_commit_sha
    gh.state.mergeability_reads = 2
    gh.push(repo, "main", {"other.tf": "# moved\n"}, "bob", deliver=False)  # GitHub makes the new test merge later
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        seen = [c.get(f"/repos/acme/infra/pulls/{pr.number}").json() for _ in range(3)]
    assert [(p["mergeable"], p["merge_commit_sha"]) for p in seen[:2]] == [(None, old), (None, old)]
    assert seen[2]["mergeable"] is True and seen[2]["merge_commit_sha"] not in (None, old)


def test_merge_methods_and_commit_pulls(gh: StandIn, key: str, repo: Repo) -> None:
    ff = gh.open_pr(repo, "ff", "alice", "Fast", {"a.tf": "1"}, deliver=False)
    assert gh.merge_pr(ff, "rebase", deliver=False) == ff.head_sha
    merged = gh.open_pr(repo, "m", "alice", "Merge", {"b.tf": "2"}, deliver=False)
    base_before = gh.commit(repo, "main", {"c.tf": "3"})
    sha = gh.merge_pr(merged, "merge", deliver=False)
    parents = subprocess.run(
        ["git", "--git-dir", str(repo.path), "rev-list", "--parents", "-n1", sha], capture_output=True, text=True
    ).stdout.split()
    assert parents == [sha, base_before, merged.head_sha] and gh.head(repo, "main") == sha
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        found = c.get(f"/repos/acme/infra/commits/{sha}/pulls").json()
        got = c.get(f"/repos/acme/infra/pulls/{merged.number}").json()
    assert [p["number"] for p in found] == [merged.number]
    assert got["merged"] is True and got["merge_commit_sha"] == sha and got["changed_files"] == 1


# -- git over HTTP -----------------------------------------------------------------------------------


def git(*args: str, cwd: Path, extra: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "GIT_CONFIG_NOSYSTEM": "1"}
    cmd = ["git", *(extra or []), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)


def test_git_fetch_of_one_sha_needs_the_basic_token(gh: StandIn, key: str, repo: Repo, tmp_path: Path) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# at head\n"}, deliver=False)
    gh.push_pr(pr, {"later.tf": "x"}, deliver=False)
    wanted = gh.state.pulls[(repo.id, pr.number)].head_sha
    basic = base64.b64encode(f"x-access-token:{mint(gh, key, repo)}".encode()).decode()
    header = ["-c", f"http.extraHeader=Authorization: Basic {basic}"]
    url = f"{gh.base_url}/acme/infra.git"
    work = tmp_path / "work"
    work.mkdir()
    assert git("init", "-q", cwd=work).returncode == 0
    fetched = git("fetch", "-q", "--depth", "1", url, wanted, cwd=work, extra=header)
    assert fetched.returncode == 0, fetched.stderr
    assert git("rev-parse", "FETCH_HEAD", cwd=work).stdout.strip() == wanted
    assert git("show", "FETCH_HEAD:later.tf", cwd=work).stdout == "x"
    clone = git("clone", "-q", url, str(tmp_path / "clone"), cwd=tmp_path, extra=header)
    assert clone.returncode == 0, clone.stderr
    assert (tmp_path / "clone" / "main.tf").exists()

    denied = git("fetch", "-q", url, wanted, cwd=work)
    assert denied.returncode != 0, denied.stderr
    assert any(r.status == 401 and r.path.endswith("/info/refs") for r in gh.state.requests)
    raw = httpx.get(f"{url}/info/refs", params={"service": "git-upload-pack"})
    assert raw.status_code == 401 and raw.headers["www-authenticate"] == 'Basic realm="GitHub"'


# -- webhooks ----------------------------------------------------------------------------------------


def test_open_pr_delivers_a_signed_event_gidgethub_accepts(gh: StandIn, repo: Repo, receiver: Receiver) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"})
    headers, body = receiver.received[-1]
    gidgethub.sansio.validate_event(body, signature=headers["x-hub-signature-256"], secret=SECRET)
    with pytest.raises(gidgethub.ValidationFailure):
        gidgethub.sansio.validate_event(body, signature=headers["x-hub-signature-256"], secret="wrong")
    assert headers["user-agent"].startswith("GitHub-Hookshot/")
    event = gidgethub.sansio.Event.from_http(headers, body, secret=SECRET)
    assert event.event == "pull_request" and event.delivery_id == gh.outbox[-1].guid
    data = event.data
    assert data["action"] == "opened" and data["number"] == pr.number
    assert data["installation"]["id"] == repo.installation_id
    assert data["pull_request"]["head"]["sha"] == pr.head_sha
    assert data["pull_request"]["head"]["repo"]["full_name"] == "acme/infra"
    assert data["repository"]["clone_url"] == f"{gh.base_url}/acme/infra.git"
    assert data["repository"]["default_branch"] == "main"
    template = json.loads((FIXTURES / "pull_request.opened.json").read_text())
    assert set(template) <= set(data)
    for part in ("head", "base"):
        assert set(template["pull_request"][part]) <= set(data["pull_request"][part])


def test_fork_pr_names_the_fork_as_head_repo(gh: StandIn, repo: Repo, receiver: Receiver) -> None:
    gh.open_pr(repo, "feature", "mallory", "Fork", {"main.tf": "evil"}, fork="mallory/infra")
    head = receiver.events()[-1].data["pull_request"]["head"]
    assert head["repo"]["full_name"] == "mallory/infra" and head["repo"]["fork"] is True


def test_sync_comment_edit_and_merge_payloads(gh: StandIn, repo: Repo, receiver: Receiver) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"})
    before = pr.head_sha
    after = gh.push_pr(pr, {"main.tf": "# again\n"})
    comment = gh.comment(repo, pr.number, "bob", "/approve-destroy")
    gh.edit_comment(comment, "/approve-destroy dns")
    sha = gh.merge_pr(pr, "squash", merged_by="carol")
    events = receiver.events()
    assert [(e.event, e.data["action"]) for e in events if "action" in e.data] == [
        ("pull_request", "opened"),
        ("pull_request", "synchronize"),
        ("issue_comment", "created"),
        ("issue_comment", "edited"),
        ("pull_request", "closed"),
    ]
    sync, created, edited, closed, push = events[1:]
    assert (sync.data["before"], sync.data["after"]) == (before, after)
    assert created.data["issue"]["pull_request"]["url"].endswith(f"/pulls/{pr.number}")
    assert created.data["comment"]["user"]["type"] == "User" and created.data["comment"]["body"] == "/approve-destroy"
    assert edited.data["changes"] == {"body": {"from": "/approve-destroy"}}
    assert closed.data["pull_request"]["merged"] is True
    assert closed.data["pull_request"]["merge_commit_sha"] == sha
    assert push.event == "push" and push.data["ref"] == "refs/heads/main" and push.data["after"] == sha
    assert push.data["head_commit"]["id"] == sha and push.data["installation"]["id"] == repo.installation_id
    assert push.data["head_commit"]["modified"] == ["main.tf"]


def test_direct_push_and_redelivery_keep_the_guid(gh: StandIn, repo: Repo, receiver: Receiver) -> None:
    before = gh.head(repo, "main")
    sha = gh.push(repo, "main", {"new.tf": "x"}, pusher="alice")
    gh.redeliver(gh.outbox[-1])
    first, again = receiver.events()
    assert first.delivery_id == again.delivery_id and first.data == again.data
    assert (first.data["before"], first.data["after"], first.data["head_commit"]["added"]) == (before, sha, ["new.tf"])


def test_deliver_false_only_builds(gh: StandIn, repo: Repo, receiver: Receiver) -> None:
    gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    assert receiver.received == [] and gh.outbox[-1].status is None
    assert gh.outbox[-1].payload["pull_request"]["state"] == "open"


# -- manifest flow and the request log ---------------------------------------------------------------


def test_manifest_code_converts_once(gh: StandIn, key: str) -> None:
    code = gh.manifest_code()
    with client(gh) as c:
        made = c.post(f"/app-manifests/{code}/conversions")
        assert made.status_code == 201
        assert (made.json()["id"], made.json()["pem"], made.json()["webhook_secret"]) == (4242, key, SECRET)
        assert (made.json()["client_id"], made.json()["client_secret"]) == (gh.app.client_id, gh.app.client_secret)
        assert c.post(f"/app-manifests/{code}/conversions").status_code == 404
        assert c.post("/app-manifests/nope/conversions").status_code == 404


def test_request_log_counts_calls(gh: StandIn, key: str, repo: Repo) -> None:
    token = mint(gh, key, repo)
    with client(gh, f"token {token}") as c:
        c.get("/repos/acme/infra/issues")
        c.get("/repos/acme/infra/pulls/999")
    assert gh.state.count_requests("GET", "/repos/acme/infra") == 2
    kinds = [(r.path, r.status, r.auth) for r in gh.state.requests]
    assert kinds[-1] == ("/repos/acme/infra/pulls/999", 404, "token")
    assert kinds[0][2] == "jwt"


def test_gidgethub_client_round_trip(gh: StandIn, key: str, repo: Repo) -> None:
    """The bot's own client stack (gidgethub + App JWT helpers) works against the stand-in unchanged."""
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    for i in range(35):
        gh.comment(repo, pr.number, "bob", f"c{i}", deliver=False)

    async def run() -> tuple[int, int]:
        async with httpx.AsyncClient() as http:
            api = GitHubAPI(http, "plangate-tests", base_url=gh.base_url)
            app_token = apps.get_jwt(app_id="4242", private_key=key)
            inst = await api.getitem("/repos/acme/infra/installation", jwt=app_token)
            token = await apps.get_installation_access_token(
                api, installation_id=str(inst["id"]), app_id="4242", private_key=key
            )
            url = f"/repos/acme/infra/issues/{pr.number}/comments"
            seen = [c async for c in api.getiter(url, oauth_token=token["token"])]
            with pytest.raises(gidgethub.ValidationError):
                await api.post(url, data={"body": "x" * 65537}, oauth_token=token["token"])
            return len(seen), len(token["token"])

    count, token_length = asyncio.run(run())
    assert count == 35 and token_length > 40


# -- answers that run git ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/repos/acme/infra/pulls/{number}/files", None),
        ("GET", "/repos/acme/infra/contents/main.tf", None),
        ("GET", "/repos/acme/infra/commits/{sha}/status", None),
        ("POST", "/repos/acme/infra/statuses/{sha}", {"state": "pending", "context": "plangate/plan"}),
        ("POST", "/repos/acme/infra/check-runs", {"name": "plangate/plan", "head_sha": "{sha}"}),
    ],
)
def test_an_answer_that_runs_git_holds_no_other_up(
    gh: StandIn,
    repo: Repo,
    api: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    body: dict[str, str] | None,
) -> None:
    """GitHub answers requests side by side: while one waits on git, another is answered (a plan's
    `git fetch` must not queue behind the API calls sent beside it)."""
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# at head\n"}, deliver=False)
    in_git, release = threading.Event(), threading.Event()
    real_git = gitops.git

    def slow_git(*args: Any, **kwargs: Any) -> str:
        in_git.set()
        assert release.wait(10), "never released"
        return real_git(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", slow_git)
    fill = {"number": str(pr.number), "sha": pr.head_sha}
    url = path.format(**fill)
    payload = None if body is None else {k: v.format(**fill) for k, v in body.items()}
    with ThreadPoolExecutor(max_workers=1) as pool:
        slow = pool.submit(api.request, method, url, json=payload)
        assert in_git.wait(10)
        try:
            other = api.get(f"/repos/acme/infra/issues/{pr.number}/comments", timeout=3)
            assert other.status_code == 200 and not slow.done()
        finally:
            release.set()
        assert slow.result(10).status_code in (200, 201)


def test_a_commit_is_looked_up_in_git_once(
    gh: StandIn, repo: Repo, api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# at head\n"}, deliver=False)
    lookups: list[tuple[str, ...]] = []
    real_git = gitops.git

    def counting(path: Path, *args: str, **kwargs: Any) -> str:
        if args[0] == "rev-parse":
            lookups.append(args)
        return real_git(path, *args, **kwargs)

    monkeypatch.setattr(gitops, "git", counting)
    status = {"state": "pending", "context": "plangate/plan"}
    for _ in range(3):
        assert api.post(f"/repos/acme/infra/statuses/{pr.head_sha}", json=status).status_code == 201
    assert len(lookups) == 1
    unknown = "0" * 40
    assert api.post(f"/repos/acme/infra/statuses/{unknown}", json=status).status_code == 422
    assert api.post(f"/repos/acme/infra/statuses/{unknown}", json=status).status_code == 422
    assert len(lookups) == 3  # a commit not found is asked about again: it may have been pushed since
