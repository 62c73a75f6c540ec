"""The stand-in's Checks API and merge queue behave as GitHub documents and answers them (tests/fixtures/github)."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gidgethub
import gidgethub.sansio
import httpx
import pytest
from gidgethub import apps
from gidgethub.httpx import GitHubAPI

from standin import StandIn, start
from standin.state import PullRequest, Repo
from tests.keys import rsa_pem
from tests.openapi import problems, response_schema
from tests.standin_client import SECRET, Receiver

WEBHOOKS = Path(__file__).parent / "fixtures" / "github" / "webhooks"
LENIENT = frozenset({"Repository"})  # the stand-in's repositories carry the fields plangate reads, not all of them
CREATE_DOCS = "https://docs.github.com/rest/checks/runs#create-a-check-run"
UPDATE_DOCS = "https://docs.github.com/rest/checks/runs#update-a-check-run"
CONCLUSIONS = '["action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"]'


@pytest.fixture
def gh(tmp_path: Path, receiver: Receiver) -> Iterator[StandIn]:
    standin = StandIn(tmp_path / "git", rsa_pem(), app_id=4242, webhook_url=receiver.url, webhook_secret=SECRET)
    with start(standin):
        yield standin


@pytest.fixture
def repo(gh: StandIn) -> Repo:
    return gh.create_repo("acme", "infra", {"main.tf": 'resource "terraform_data" "a" {}\n', "README.md": "hi\n"})


@pytest.fixture
def pr(gh: StandIn, repo: Repo) -> PullRequest:
    return gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)


def token_for(gh: StandIn, repo: Repo) -> str:
    """An installation token, got the way plangate gets one: App JWT, then the access-token route (gidgethub)."""

    async def mint() -> str:
        async with httpx.AsyncClient() as http:
            api = GitHubAPI(http, "plangate-tests", base_url=gh.base_url)
            jwt = apps.get_jwt(app_id=str(gh.app.id), private_key=rsa_pem())
            installation = await api.getitem(f"/repos/{repo.full_name}/installation", jwt=jwt)
            made = await apps.get_installation_access_token(
                api, installation_id=str(installation["id"]), app_id=str(gh.app.id), private_key=rsa_pem()
            )
            token: str = made["token"]
            return token

    return asyncio.run(mint())


def client(gh: StandIn, token: str) -> httpx.Client:
    headers = {"Accept": "application/vnd.github+json", "Authorization": f"token {token}"}
    return httpx.Client(base_url=gh.base_url, headers=headers)


def webhook_schema(name: str) -> dict[str, Any]:
    spec = json.loads((WEBHOOKS / "schemas" / f"{name}.schema.json").read_text())
    schema: dict[str, Any] = spec["requestBody"]["content"]["application/json"]["schema"]
    return schema


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((WEBHOOKS / f"{name}.json").read_text())
    return data


def git(repo: Repo, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo.path), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def run_body(sha: str, **extra: Any) -> dict[str, Any]:
    return {"name": "plangate/plan", "head_sha": sha, **extra}


# -- the REST routes ---------------------------------------------------------------------------------


def test_create_update_get_and_list_as_plangate_does(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    """gidgethub, as an installation: a queued run, completed with a summary and a button; then a re-run."""
    token = token_for(gh, repo)
    url = f"/repos/{repo.full_name}/check-runs"

    async def scenario() -> tuple[dict[str, Any], ...]:
        async with httpx.AsyncClient() as http:
            api = GitHubAPI(http, "plangate-tests", base_url=gh.base_url, oauth_token=token)
            made = await api.post(url, data=run_body(pr.head_sha, status="in_progress", external_id="42"))
            button = {"label": "Approve destroys", "description": "Approve the destroys", "identifier": "approve"}
            done = await api.patch(
                f"{url}/{made['id']}",
                data={
                    "conclusion": "failure",
                    "output": {"title": "1 to destroy", "summary": "## Plan\n`terraform_data.a`", "text": "details"},
                    "actions": [button],
                },
            )
            got = await api.getitem(f"{url}/{made['id']}")
            again = await api.post(url, data=run_body(pr.head_sha, conclusion="success"))
            other = await api.post(url, data={"name": "plangate/destroy", "head_sha": pr.head_sha})
            url_for_ref = f"/repos/{repo.full_name}/commits/feature/check-runs?per_page=1"
            listed = [r async for r in api.getiter(url_for_ref, iterable_key="check_runs")]
            everything = await api.getitem(f"/repos/{repo.full_name}/commits/{pr.head_sha}/check-runs?filter=all")
            return made, done, got, again, other, {"latest": listed, "all": everything}

    made, done, got, again, other, lists = asyncio.run(scenario())
    assert problems(made, response_schema("checks/create", "201"), frozenset()) == []
    assert (made["status"], made["conclusion"], made["external_id"], made["name"]) == (
        "in_progress",
        None,
        "42",
        "plangate/plan",
    )
    assert made["app"]["id"] == gh.app.id and made["app"]["slug"] == "plangate"
    assert [p["number"] for p in made["pull_requests"]] == [pr.number]
    assert made["url"] == f"{gh.base_url}/repos/acme/infra/check-runs/{made['id']}"
    assert problems(done, response_schema("checks/update"), frozenset()) == []
    assert (done["status"], done["conclusion"]) == ("completed", "failure") and done["completed_at"] is not None
    assert done["output"]["title"] == "1 to destroy" and done["output"]["text"] == "details"
    assert got == done and problems(got, response_schema("checks/get"), frozenset()) == []
    assert again["check_suite"] == made["check_suite"]  # one suite per App and commit
    assert [r["id"] for r in lists["latest"]] == [other["id"], again["id"]]  # newest of each name, newest first
    assert lists["all"]["total_count"] == 3
    assert problems(lists["all"], response_schema("checks/list-for-ref"), frozenset()) == []
    assert set(gh.check_runs(repo, pr.head_sha)) == {"plangate/plan", "plangate/destroy"}
    assert gh.check_runs(repo, pr.head_sha)["plangate/plan"].id == again["id"]
    assert [r.id for r in gh.all_check_runs(repo, pr.head_sha)] == [made["id"], again["id"], other["id"]]


def test_list_filters_and_pages(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    with client(gh, token_for(gh, repo)) as c:
        for name in ("a", "b", "c"):
            c.post("/repos/acme/infra/check-runs", json={"name": name, "head_sha": pr.head_sha, "status": "queued"})
        c.post("/repos/acme/infra/check-runs", json={"name": "a", "head_sha": pr.head_sha, "conclusion": "success"})
        url = f"/repos/acme/infra/commits/{pr.head_sha}/check-runs"
        first = c.get(url, params={"per_page": 2})
        rest = c.get(first.links["next"]["url"])
        by_name = c.get(url, params={"check_name": "a", "filter": "all"}).json()
        queued = c.get("/repos/acme/infra/commits/heads/feature/check-runs", params={"status": "queued"}).json()
        missing = c.get("/repos/acme/infra/commits/no-such-branch/check-runs")
    assert first.json()["total_count"] == 3 and len(first.json()["check_runs"]) == 2
    assert [r["name"] for r in [*first.json()["check_runs"], *rest.json()["check_runs"]]] == ["a", "c", "b"]
    assert [r["status"] for r in by_name["check_runs"]] == ["completed", "queued"]
    assert sorted(r["name"] for r in queued["check_runs"]) == ["b", "c"]
    assert missing.status_code == 422 and missing.json()["message"] == "No commit found for SHA: no-such-branch"


def test_defaults_and_a_conclusion_completing_the_run(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    with client(gh, token_for(gh, repo)) as c:
        made = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha)).json()
        done = c.post(
            "/repos/acme/infra/check-runs",
            json=run_body(pr.head_sha, conclusion="neutral", completed_at="2030-01-02T03:04:05+01:00"),
        ).json()
        reopened = c.patch(f"/repos/acme/infra/check-runs/{done['id']}", json={"status": "in_progress"}).json()
    assert (made["status"], made["conclusion"], made["completed_at"], made["external_id"]) == ("queued", None, None, "")
    assert made["started_at"] is not None and made["details_url"] == gh.base_url  # the App's homepage
    assert made["output"] == {**made["output"], "title": None, "summary": None, "text": None, "annotations_count": 0}
    assert (done["status"], done["completed_at"]) == ("completed", "2030-01-02T02:04:05Z")
    assert (reopened["status"], reopened["conclusion"], reopened["completed_at"]) == ("in_progress", None, None)


def _invalid(message: str) -> tuple[int, str]:
    return 422, "Invalid request.\n\n" + message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"output": {"title": "t", "summary": "x" * 65536}},
            _invalid("Only 65535 characters are allowed; 65536 were supplied."),
        ),
        (
            {"output": {"title": "t", "summary": "s", "text": "x" * 65536}},
            _invalid("Only 65535 characters are allowed; 65536 were supplied."),
        ),
        ({"output": {"title": "t"}}, _invalid('"summary" wasn\'t supplied.')),
        (
            {
                "output": {
                    "title": "t",
                    "summary": "s",
                    "annotations": [
                        {"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m"}
                    ]
                    * 51,
                }
            },
            _invalid("No more than 50 items are allowed; 51 were supplied."),
        ),
        (
            {"actions": [{"label": "l", "description": "d", "identifier": "i"}] * 4},
            _invalid("No more than 3 items are allowed; 4 were supplied."),
        ),
        (
            {"actions": [{"label": "l" * 21, "description": "d", "identifier": "i"}]},
            _invalid("Only 20 characters are allowed; 21 were supplied."),
        ),
        (
            {"actions": [{"label": "l", "description": "d" * 41, "identifier": "i"}]},
            _invalid("Only 40 characters are allowed; 41 were supplied."),
        ),
        (
            {"actions": [{"label": "l", "description": "d", "identifier": "i" * 21}]},
            _invalid("Only 20 characters are allowed; 21 were supplied."),
        ),
        ({"actions": [{"label": "l", "description": "d"}]}, _invalid('"identifier" wasn\'t supplied.')),
        ({"conclusion": "bogus"}, _invalid(f"bogus is not a member of {CONCLUSIONS}.")),
        ({"status": "waiting"}, _invalid('waiting is not a member of ["queued", "in_progress", "completed"].')),
        ({"name": None}, _invalid("For 'properties/name', nil is not a string.")),
        ({"started_at": "yesterday"}, _invalid("yesterday is not a valid date-time.")),
        ({"head_sha": "0" * 40}, (422, f"No commit found for SHA: {'0' * 40}")),
    ],
)
def test_create_refusals_as_github_words_them(
    gh: StandIn, repo: Repo, pr: PullRequest, change: dict[str, Any], expected: tuple[int, str]
) -> None:
    with client(gh, token_for(gh, repo)) as c:
        answer = c.post("/repos/acme/infra/check-runs", json={**run_body(pr.head_sha), **change})
    assert (answer.status_code, answer.json()["message"]) == expected
    assert answer.json()["documentation_url"] == CREATE_DOCS and answer.json()["status"] == "422"
    assert gh.all_check_runs(repo, pr.head_sha) == []


def test_create_refusals_of_the_record(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    """Past the schema: a completion needs a conclusion; the texts are also limited in bytes; SHAs are full."""
    missing = {"resource": "CheckRun", "code": "missing_field", "field": "conclusion"}
    with client(gh, token_for(gh, repo)) as c:

        def post(**change: Any) -> httpx.Response:
            return c.post("/repos/acme/infra/check-runs", json={**run_body(pr.head_sha), **change})

        completed = post(status="completed")
        completed_at = post(completed_at="2030-01-01T00:00:00Z")
        wide = post(output={"title": "t", "summary": "é" * 40000})
        missing_name = c.post("/repos/acme/infra/check-runs", json={"head_sha": pr.head_sha})
        short = post(head_sha=pr.head_sha[:7])
        at_limits = post(
            output={"title": "t", "summary": "x" * 65535, "text": "y" * 65535},
            actions=[
                {"label": "l" * 20, "description": "d" * 40, "identifier": f"i{n}".ljust(20, "-")} for n in range(3)
            ],
        )
    for answer in (completed, completed_at):
        assert answer.status_code == 422 and answer.json()["errors"] == [missing], answer.text
        assert answer.json()["message"] == "Validation Failed"
    assert wide.json()["errors"] == [
        {
            "resource": "CheckRun",
            "code": "custom",
            "field": "summary",
            "message": "summary exceeds a maximum bytesize of 65535",
        }
    ]
    assert missing_name.json()["message"] == 'Invalid request.\n\n"name" wasn\'t supplied.'
    assert short.status_code == 422 and short.json()["message"] == f"No commit found for SHA: {pr.head_sha[:7]}"
    assert at_limits.status_code == 201, at_limits.text


def test_update_refusals(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    """The update schema requires a conclusion with `completed`, in an anyOf; the limits are the create's."""
    with client(gh, token_for(gh, repo)) as c:
        made = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha)).json()
        url = f"/repos/acme/infra/check-runs/{made['id']}"
        answers = {
            "completed": c.patch(url, json={"status": "completed"}),
            "waiting": c.patch(url, json={"status": "waiting"}),
            "long": c.patch(url, json={"output": {"title": "t", "summary": "x" * 65536}}),
            "actions": c.patch(url, json={"actions": [{"label": "l", "description": "d", "identifier": "i"}] * 4}),
        }
        unchanged = c.get(url).json()
    assert answers["completed"].json()["message"] == _invalid('No subschema in "anyOf" matched.')[1]
    assert answers["waiting"].json()["message"] == _invalid('No subschema in "anyOf" matched.')[1]
    assert answers["long"].json()["message"] == _invalid("Only 65535 characters are allowed; 65536 were supplied.")[1]
    assert answers["actions"].json()["message"] == _invalid("No more than 3 items are allowed; 4 were supplied.")[1]
    assert {a.status_code for a in answers.values()} == {422}
    assert {a.json()["documentation_url"] for a in answers.values()} == {UPDATE_DOCS}
    assert unchanged == made


def test_update_of_unknown_or_foreign_runs_is_404(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    ci = gh.add_foreign_check_run(repo, pr.head_sha, "ci/build", app_slug="ci-service")
    other = gh.create_repo("acme", "other", {"a": "b"})
    with client(gh, token_for(gh, repo)) as c:
        theirs = c.patch(f"/repos/acme/infra/check-runs/{ci.id}", json={"conclusion": "failure"})
        unknown = c.patch("/repos/acme/infra/check-runs/999999", json={"conclusion": "failure"})
        seen = c.get(f"/repos/acme/infra/check-runs/{ci.id}")
        mine = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha)).json()
        elsewhere = c.get(f"/repos/acme/other/check-runs/{mine['id']}")
        listed = c.get(f"/repos/acme/infra/commits/{pr.head_sha}/check-runs", params={"app_id": ci.app.id}).json()
    assert (theirs.status_code, unknown.status_code, elsewhere.status_code) == (404, 404, 404)
    assert theirs.json()["message"] == "Not Found" and other.name == "other"
    assert (
        seen.status_code == 200
        and seen.json()["app"]["slug"] == "ci-service"
        and seen.json()["conclusion"] == "success"
    )
    assert [r["name"] for r in listed["check_runs"]] == ["ci/build"]
    assert gh.check_runs(repo, pr.head_sha)["ci/build"].conclusion == "success"


# -- who may write -----------------------------------------------------------------------------------


def test_checks_permission_of_the_installation(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    token = token_for(gh, repo)
    with client(gh, token) as c:
        made = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha)).json()
        gh.set_installation_permission(repo, "checks", "read")
        refused = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha))
        refused_update = c.patch(f"/repos/acme/infra/check-runs/{made['id']}", json={"conclusion": "success"})
        readable = c.get(f"/repos/acme/infra/check-runs/{made['id']}")
        gh.set_installation_permission(repo, "checks", None)
        unreadable = c.get(f"/repos/acme/infra/commits/{pr.head_sha}/check-runs")
    assert refused.status_code == 403 and refused.json() == {
        "message": "Resource not accessible by integration",
        "documentation_url": CREATE_DOCS,
        "status": "403",
    }
    assert refused_update.status_code == 403 and readable.status_code == 200
    assert unreadable.status_code == 403 and unreadable.json()["message"] == "Resource not accessible by integration"
    assert "checks" not in token_for_permissions(gh, repo)


def token_for_permissions(gh: StandIn, repo: Repo) -> dict[str, str]:
    jwt = apps.get_jwt(app_id=str(gh.app.id), private_key=rsa_pem())
    made = httpx.post(
        f"{gh.base_url}/app/installations/{repo.installation_id}/access_tokens",
        headers={"Authorization": f"Bearer {jwt}", "Accept": "application/vnd.github+json"},
    )
    permissions: dict[str, str] = made.json()["permissions"]
    return permissions


def test_only_installation_tokens_write_check_runs(gh: StandIn, repo: Repo, pr: PullRequest) -> None:
    user_token = gh.state.mint_user_token("alice")  # a person's token: GitHub wants an App for check runs
    jwt = apps.get_jwt(app_id=str(gh.app.id), private_key=rsa_pem())
    person = client(gh, user_token).post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha))
    app_itself = httpx.post(
        f"{gh.base_url}/repos/acme/infra/check-runs",
        json=run_body(pr.head_sha),
        headers={"Authorization": f"Bearer {jwt}"},
    )
    nobody = httpx.post(f"{gh.base_url}/repos/acme/infra/check-runs", json=run_body(pr.head_sha))
    assert person.status_code == 403 and person.json()["message"] == "You must authenticate via a GitHub App."
    assert app_itself.status_code == 403 and app_itself.json()["message"] == "Resource not accessible by integration"
    assert nobody.status_code == 401
    assert gh.all_check_runs(repo, pr.head_sha) == []


# -- check_run events --------------------------------------------------------------------------------


def _check_events(receiver: Receiver) -> list[gidgethub.sansio.Event]:
    return [e for e in receiver.events() if e.event == "check_run"]


def _conforms(payload: dict[str, Any], name: str) -> None:
    assert problems(payload, webhook_schema(name), LENIENT) == []
    if (WEBHOOKS / f"{name}.json").exists():
        template = example(name)
        assert set(template) - {"organization"} <= set(payload)
        assert set(template["check_run"]) <= set(payload["check_run"])
        assert set(template["check_run"]["check_suite"]) - {"deployment"} <= set(payload["check_run"]["check_suite"])


def test_the_app_hears_its_own_runs_created_and_completed(
    gh: StandIn, repo: Repo, pr: PullRequest, receiver: Receiver
) -> None:
    with client(gh, token_for(gh, repo)) as c:
        queued = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha)).json()
        c.patch(f"/repos/acme/infra/check-runs/{queued['id']}", json={"status": "in_progress"})
        c.patch(f"/repos/acme/infra/check-runs/{queued['id']}", json={"conclusion": "success"})
        c.post(
            "/repos/acme/infra/check-runs",
            json={"name": "plangate/destroy", "head_sha": pr.head_sha, "conclusion": "failure"},
        )
    gh.wait_for_app_events()
    events = _check_events(receiver)
    assert [(e.data["action"], e.data["check_run"]["name"]) for e in events] == [
        ("created", "plangate/plan"),
        ("completed", "plangate/plan"),
        ("created", "plangate/destroy"),
        ("completed", "plangate/destroy"),
    ]
    created, completed = events[0].data, events[1].data
    _conforms(created, "check_run.created")
    _conforms(completed, "check_run.completed")
    assert created["sender"]["login"] == "plangate[bot]" and created["installation"]["id"] == repo.installation_id
    assert created["check_run"]["status"] == "queued" and created["check_run"]["app"]["id"] == gh.app.id
    assert completed["check_run"]["conclusion"] == "success"
    assert completed["check_run"]["check_suite"]["status"] == "completed"
    assert completed["check_run"]["check_suite"]["head_branch"] == "feature"
    assert [p["number"] for p in completed["check_run"]["pull_requests"]] == [pr.number]
    assert events[3].data["check_run"]["check_suite"]["conclusion"] == "failure"  # the suite's worst run


def test_rerun_sends_rerequested_and_resets_the_suite(
    gh: StandIn, repo: Repo, pr: PullRequest, receiver: Receiver
) -> None:
    with client(gh, token_for(gh, repo)) as c:
        made = c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha, conclusion="failure")).json()
        pending = c.post("/repos/acme/infra/check-runs", json={"name": "other", "head_sha": pr.head_sha}).json()
    gh.wait_for_app_events()
    run = gh.check_runs(repo, pr.head_sha)["plangate/plan"]
    gh.rerequest_check_run(run, "alice")
    rerequested = _check_events(receiver)[-1].data
    _conforms(rerequested, "check_run.rerequested")
    assert rerequested["action"] == "rerequested" and rerequested["sender"]["login"] == "alice"
    assert rerequested["check_run"]["id"] == made["id"] and rerequested["check_run"]["conclusion"] == "failure"
    assert (
        rerequested["check_run"]["check_suite"]["status"],
        rerequested["check_run"]["check_suite"]["conclusion"],
    ) == (
        "queued",
        None,
    )
    assert run.status == "completed"  # GitHub leaves the run itself alone
    with pytest.raises(ValueError, match="nothing to press"):
        gh.rerequest_check_run(gh.check_runs(repo, pr.head_sha)["other"], "alice")
    with pytest.raises(ValueError, match="nothing to press"):
        gh.rerequest_check_run(gh.add_foreign_check_run(repo, pr.head_sha, "ci"), "alice")
    assert pending["status"] == "queued"


def test_action_button_sends_requested_action(gh: StandIn, repo: Repo, pr: PullRequest, receiver: Receiver) -> None:
    button = {
        "label": "Approve destroys",
        "description": "Approve what this plan destroys",
        "identifier": "approve-destroys",
    }
    with client(gh, token_for(gh, repo)) as c:
        c.post(
            "/repos/acme/infra/check-runs", json=run_body(pr.head_sha, conclusion="action_required", actions=[button])
        )
    gh.wait_for_app_events()
    run = gh.check_runs(repo, pr.head_sha)["plangate/plan"]
    gh.request_check_run_action(run, "bob", "approve-destroys")
    pressed = _check_events(receiver)[-1].data
    _conforms(pressed, "check_run.requested_action")
    assert pressed["requested_action"] == {"identifier": "approve-destroys"} and pressed["sender"]["login"] == "bob"
    assert pressed["check_run"]["conclusion"] == "action_required"
    with pytest.raises(ValueError, match="offers no action"):
        gh.request_check_run_action(run, "bob", "approve")


def test_no_rerequest_event_without_checks_write(gh: StandIn, repo: Repo, pr: PullRequest, receiver: Receiver) -> None:
    with client(gh, token_for(gh, repo)) as c:
        c.post("/repos/acme/infra/check-runs", json=run_body(pr.head_sha, conclusion="success"))
    gh.wait_for_app_events()
    gh.set_installation_permission(repo, "checks", "read")
    gh.rerequest_check_run(gh.check_runs(repo, pr.head_sha)["plangate/plan"], "alice")
    assert [a for _, a in receiver.actions()] == ["created", "completed"]


# -- the merge queue ---------------------------------------------------------------------------------


@pytest.fixture
def two_prs(gh: StandIn, repo: Repo) -> tuple[PullRequest, PullRequest]:
    first = gh.open_pr(repo, "add-a", "alice", "Add a", {"a.tf": "# a\n"}, deliver=False)
    second = gh.open_pr(repo, "add-b", "bob", "Add b", {"b.tf": "# b\n"}, deliver=False)
    return first, second


def _fetch_by_sha(gh: StandIn, repo: Repo, token: str, sha: str, work: Path) -> str:
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    header = "http.extraHeader=Authorization: Basic " + _basic(token)
    url = f"{gh.base_url}/{repo.full_name}.git"
    subprocess.run(["git", "-c", header, "fetch", "-q", "--depth", "1", url, sha], cwd=work, check=True)
    return subprocess.run(
        ["git", "ls-tree", "--name-only", "FETCH_HEAD"], cwd=work, capture_output=True, text=True
    ).stdout


def _basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def test_merge_group_of_two_prs_is_checked_then_merged(
    gh: StandIn, repo: Repo, two_prs: tuple[PullRequest, PullRequest], receiver: Receiver, tmp_path: Path
) -> None:
    first, second = two_prs
    main_before = gh.head(repo, "main")
    group = gh.queue_merge_group(repo, [first, second])
    expected_ref = f"gh-readonly-queue/main/pr-{second.number}-{second.head_sha}"
    assert group.head_ref == expected_ref and gh.head(repo, expected_ref) == group.head_sha
    first_merge = group.merge_commits[first.number]
    assert git(repo, "rev-list", "--parents", "-n1", group.head_sha).split()[1:] == [first_merge, second.head_sha]
    assert git(repo, "rev-list", "--parents", "-n1", first_merge).split()[1:] == [main_before, first.head_sha]
    assert {"a.tf", "b.tf", "main.tf"} <= set(git(repo, "ls-tree", "--name-only", group.head_sha).split())

    (event,) = receiver.events()
    assert (event.event, event.data["action"]) == ("merge_group", "checks_requested")
    assert problems(event.data, webhook_schema("merge_group.checks_requested"), LENIENT) == []
    assert set(example("merge_group.checks_requested")) - {"organization"} <= set(event.data)
    queued = event.data["merge_group"]
    assert queued == {
        "head_sha": group.head_sha,
        "head_ref": f"refs/heads/{expected_ref}",
        "base_sha": main_before,
        "base_ref": "refs/heads/main",
        "head_commit": queued["head_commit"],
    }
    head_commit = queued["head_commit"]
    assert (head_commit["id"], head_commit["tree_id"]) == (
        group.head_sha,
        git(repo, "rev-parse", f"{group.head_sha}^{{tree}}"),
    )
    assert head_commit["message"] == f"Merge pull request #{second.number} from acme/add-b\n\nAdd b"
    assert event.data["sender"]["login"] == "bob" and event.data["installation"]["id"] == repo.installation_id

    token = token_for(gh, repo)
    assert {"a.tf", "b.tf"} <= set(_fetch_by_sha(gh, repo, token, group.head_sha, tmp_path / "work").split())
    with client(gh, token) as c:
        status = c.post(
            f"/repos/acme/infra/statuses/{group.head_sha}", json={"state": "success", "context": "plangate/plan"}
        )
        run = c.post("/repos/acme/infra/check-runs", json=run_body(group.head_sha, conclusion="success"))
        associated = c.get(f"/repos/acme/infra/commits/{group.head_sha}/pulls").json()
    assert status.status_code == 201 and run.status_code == 201, run.text
    assert associated == [] and run.json()["pull_requests"] == []  # no PR is associated with the queue's commit
    assert gh.statuses(repo, group.head_sha)["plangate/plan"].state == "success"
    assert gh.check_runs(repo, group.head_sha)["plangate/plan"].conclusion == "success"
    gh.wait_for_app_events()

    gh.merge_group_done(group, "merged")
    assert gh.head(repo, "main") == group.head_sha and gh.head(repo, expected_ref) is None
    after = [e for e in receiver.events() if e.event != "check_run"][1:]
    assert [(e.event, e.data.get("action")) for e in after] == [
        ("pull_request", "closed"),
        ("pull_request", "closed"),
        ("push", None),
        ("merge_group", "destroyed"),
    ]
    for closed, pull, merge_commit in zip(after[:2], (first, second), (first_merge, group.head_sha), strict=True):
        shown = closed.data["pull_request"]
        assert (shown["number"], shown["merged"], shown["state"]) == (pull.number, True, "closed")
        assert shown["merge_commit_sha"] == merge_commit and shown["merged_at"] is not None
        assert shown["merged_by"]["login"] == "github-merge-queue[bot]"
    push, destroyed = after[2].data, after[3].data
    assert (push["ref"], push["before"], push["after"]) == ("refs/heads/main", main_before, group.head_sha)
    assert push["pusher"]["name"] == "github-merge-queue[bot]" and push["head_commit"]["id"] == group.head_sha
    assert problems(push, webhook_schema("push"), LENIENT) == []
    assert destroyed["reason"] == "merged" and destroyed["merge_group"]["head_sha"] == group.head_sha
    assert problems(destroyed, webhook_schema("merge_group.destroyed"), LENIENT) == []
    with client(gh, token) as c:
        merged_by_it = c.get(f"/repos/acme/infra/commits/{group.head_sha}/pulls").json()
    assert [p["number"] for p in merged_by_it] == [second.number]  # the PR that commit merged
    with pytest.raises(ValueError, match="cannot end"):
        gh.merge_group_done(group, "dequeued")


@pytest.mark.parametrize("reason", ["invalidated", "dequeued"])
def test_a_group_thrown_away_leaves_main_and_the_prs(
    gh: StandIn, repo: Repo, two_prs: tuple[PullRequest, PullRequest], receiver: Receiver, reason: str
) -> None:
    main_before = gh.head(repo, "main")
    group = gh.queue_merge_group(repo, list(two_prs), "main", by="carol")
    gh.merge_group_done(group, reason)
    assert gh.head(repo, "main") == main_before and gh.head(repo, group.head_ref) is None
    assert all(p.state == "open" and not p.merged for p in two_prs)
    assert receiver.actions() == [("merge_group", "checks_requested"), ("merge_group", "destroyed")]
    checks_requested, destroyed = (e.data for e in receiver.events())
    assert checks_requested["sender"]["login"] == "carol"
    assert destroyed["reason"] == reason and destroyed["merge_group"] == checks_requested["merge_group"]


def test_merge_groups_that_github_would_not_build_or_merge(
    gh: StandIn, repo: Repo, two_prs: tuple[PullRequest, PullRequest], receiver: Receiver
) -> None:
    first, _ = two_prs
    clash = gh.open_pr(repo, "clash", "carol", "Clash", {"a.tf": "# not a\n"}, deliver=False)
    with pytest.raises(ValueError, match="conflicts"):
        gh.queue_merge_group(repo, [first, clash])
    gh.commit(repo, "release", {"r": "r"})
    elsewhere = gh.open_pr(repo, "fix", "carol", "Fix", {"f": "f"}, base="release", deliver=False)
    with pytest.raises(ValueError, match="not an open PR into main"):
        gh.queue_merge_group(repo, [elsewhere])
    group = gh.queue_merge_group(repo, [first])
    gh.push(repo, "main", {"other.tf": "x"}, pusher="dave", deliver=False)
    with pytest.raises(ValueError, match="moved"):
        gh.merge_group_done(group, "merged")
    gh.merge_group_done(group, "invalidated")
    assert first.state == "open"


def test_merge_group_events_need_the_merge_queues_permission(
    gh: StandIn, repo: Repo, two_prs: tuple[PullRequest, PullRequest], receiver: Receiver
) -> None:
    gh.set_installation_permission(repo, "merge_queues", None)
    group = gh.queue_merge_group(repo, list(two_prs))
    gh.merge_group_done(group, "merged")
    assert receiver.actions() == [("pull_request", "closed"), ("pull_request", "closed"), ("push", None)]
