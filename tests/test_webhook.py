"""POST /webhook against a real Redis: verification, routing, enqueue-once, and never a 5xx."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rq import Queue
from starlette.testclient import TestClient

from bot.app import create_app
from core.contract import COMMANDS_QUEUE, PLANS_QUEUE, CommentChange, Jobs, PlanRequest
from core.contract_cleanup import GroupGone, PullClosed
from core.trigger import Trigger
from plumbing import settings as settings_module
from tests.webhooks import FIXTURES, SECRET, event_name, load, signed_headers

PLAN_FIXTURES = {
    "pull_request.opened.json",
    "pull_request.opened.with-null-body.json",
    "pull_request.opened.with-organization.json",
    "pull_request.reopened.json",
    "pull_request.synchronize.json",
    "pull_request.ready_for_review.json",
}
PUSH_FIXTURES = {"push.new-branch-default.json", "push.no-username-committer.json"}
MERGE_GROUP_FIXTURES = {"merge_group.checks_requested.json"}  # check_run examples are other Apps' runs: ignored
CLOSED_FIXTURES = {"pull_request.closed.not-merged.json", "pull_request.closed.not-merged.atlantis.json"}
METRICS_TOKEN = "metrics-token-0123456789abcdef"
INSTALLATION_FIXTURES = {
    "installation.created.json",
    "installation.created.with-requester.json",
    "installation.deleted.json",
    "installation.new_permissions_accepted.json",
    "installation.suspend.json",
    "installation.unsuspend.json",
    "installation_repositories.added.json",
    "installation_repositories.removed.json",
}


@pytest.fixture
def client(redis_url: str, redis_conn: redis.Redis) -> Iterator[TestClient]:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "REDIS_URL": redis_url, "PLANGATE_STATUS_TOKEN": METRICS_TOKEN}
    with TestClient(create_app(settings_module.load(env))) as c:
        yield c


def queued(conn: redis.Redis) -> dict[str, list[str]]:
    return {name: Queue(name, connection=conn).job_ids for name in (PLANS_QUEUE, COMMANDS_QUEUE)}


def post(client: TestClient, event: str, payload: object, **header_overrides: str) -> tuple[int, dict[str, str]]:
    body = json.dumps(payload).encode()
    headers = {**signed_headers(event, body), **header_overrides}
    r = client.post("/webhook", content=body, headers=headers)
    return r.status_code, r.json()


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_every_published_example_is_accepted(client: TestClient, redis_conn: redis.Redis, fixture: str) -> None:
    status, answer = post(client, event_name(fixture), load(fixture))
    jobs = queued(redis_conn)
    if fixture in PLAN_FIXTURES:
        assert status == 202, answer
        assert len(jobs[PLANS_QUEUE]) == 1 and jobs[PLANS_QUEUE][0].startswith("plan-")
    elif fixture in PUSH_FIXTURES:
        assert status == 202, answer
        assert len(jobs[PLANS_QUEUE]) == 1 and jobs[PLANS_QUEUE][0].startswith("push-")
    elif fixture in MERGE_GROUP_FIXTURES:
        assert status == 202, answer
        assert len(jobs[PLANS_QUEUE]) == 1 and jobs[PLANS_QUEUE][0].startswith("mq-")
    elif fixture in CLOSED_FIXTURES:  # a job drops the PR's records and cancels its queued plan
        assert status == 202, answer
        assert len(jobs[COMMANDS_QUEUE]) == 1 and jobs[COMMANDS_QUEUE][0].startswith("closed-")
    elif fixture == "pull_request_review.dismissed.json":  # an approval it carried stops counting
        assert status == 202, answer
        dismissed = load(fixture)
        assert jobs[COMMANDS_QUEUE] == [f"dismissal-{dismissed['repository']['id']}-{dismissed['review']['id']}"]
    elif fixture in INSTALLATION_FIXTURES:
        assert status == 202, answer
        assert jobs[PLANS_QUEUE] == ["drift-targets-refresh"]
    else:
        assert status == 200, answer
        assert jobs == {PLANS_QUEUE: [], COMMANDS_QUEUE: []}


def test_plan_job_carries_a_typed_payload_of_plain_values(client: TestClient, redis_conn: redis.Redis) -> None:
    payload = load("pull_request.synchronize.json")
    assert post(client, "pull_request", payload)[0] == 202
    job = Queue(PLANS_QUEUE, connection=redis_conn).jobs[0]
    assert job.func_name == Jobs.PLAN_PR
    request = job.kwargs["request"]
    assert isinstance(request, PlanRequest)
    assert request.sha == payload["pull_request"]["head"]["sha"]
    assert request.pr == payload["number"]
    assert request.installation_id == payload["installation"]["id"]
    plain = (str, int, bool, tuple, Trigger)  # a Trigger is a kind and a string
    assert all(isinstance(v, plain) for v in vars(request).values())  # never a token or client
    assert all(isinstance(v, str) for v in vars(request.trigger).values())


def test_duplicate_delivery_and_opened_plus_synchronize_enqueue_once(
    client: TestClient, redis_conn: redis.Redis
) -> None:
    opened = load("pull_request.opened.json")
    sync = load("pull_request.synchronize.json")
    sync["pull_request"]["head"]["sha"] = opened["pull_request"]["head"]["sha"]
    sync["pull_request"]["number"] = opened["pull_request"]["number"]
    sync["repository"] = opened["repository"]
    body = json.dumps(opened).encode()
    headers = signed_headers("pull_request", body, delivery="same-delivery")
    assert client.post("/webhook", content=body, headers=headers).status_code == 202
    redelivered = client.post("/webhook", content=body, headers=headers)
    assert redelivered.status_code == 200 and redelivered.json()["outcome"] == "duplicate"
    assert post(client, "pull_request", sync)[1]["outcome"] == "duplicate"
    assert len(queued(redis_conn)[PLANS_QUEUE]) == 1


def test_new_sha_is_a_new_plan(client: TestClient, redis_conn: redis.Redis) -> None:
    payload = load("pull_request.synchronize.json")
    post(client, "pull_request", payload)
    payload["pull_request"]["head"]["sha"] = "f" * 40
    assert post(client, "pull_request", payload)[0] == 202
    assert len(queued(redis_conn)[PLANS_QUEUE]) == 2


def test_closed_pr_has_a_job_cancel_its_queued_plan(client: TestClient, redis_conn: redis.Redis) -> None:
    opened = load("pull_request.opened.json")
    post(client, "pull_request", opened)
    (plan,) = queued(redis_conn)[PLANS_QUEUE]
    pull = dict(opened["pull_request"], state="closed", closed_at="2024-05-01T12:34:56Z")  # as GitHub sends it
    closed = dict(opened, action="closed", pull_request=pull)
    status, answer = post(client, "pull_request", closed)
    assert (status, answer["outcome"]) == (202, "enqueued")
    (job,) = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs  # taken before any plan, its id RQ's kind
    assert job.func_name == Jobs.PULL_CLOSED and ":" not in job.id
    assert job.kwargs["request"] == PullClosed(
        opened["repository"]["id"],
        pull["number"],
        pull["head"]["sha"],
        plan,
        "2024-05-01T12:34:56Z",
        repo=opened["repository"]["full_name"],
        merged=False,
    )
    assert post(client, "pull_request", closed)[1]["outcome"] == "duplicate"  # a redelivery: tidied once
    merged = dict(closed, pull_request=dict(pull, merged=True, closed_at="2024-05-01T12:35:00Z"))
    assert post(client, "pull_request", merged)[0] == 202  # closed again after a reopen: merged this time
    assert Queue(COMMANDS_QUEUE, connection=redis_conn).jobs[-1].kwargs["request"].merged is True


def test_a_finished_merge_group_has_a_job_mark_it_gone(client: TestClient, redis_conn: redis.Redis) -> None:
    requested = load("merge_group.checks_requested.json")
    post(client, "merge_group", requested)
    (plan,) = queued(redis_conn)[PLANS_QUEUE]
    status, answer = post(client, "merge_group", dict(requested, action="destroyed", reason="merged"))
    assert (status, answer["outcome"]) == (202, "enqueued")
    (job,) = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs
    group = requested["merge_group"]
    assert job.func_name == Jobs.MERGE_GROUP_GONE
    assert job.kwargs["request"] == GroupGone(requested["repository"]["id"], group["head_sha"], plan)


def _review_payload(body: str, user_type: str = "User", action: str = "submitted") -> dict[str, Any]:
    payload = load("pull_request_review.submitted.json")
    payload["action"] = action
    payload["review"]["body"] = body
    payload["review"]["user"]["type"] = user_type
    return payload


def _thread_payload(body: str, in_reply_to: int | None = None) -> dict[str, Any]:
    payload = load("pull_request_review_comment.created.json")
    payload["comment"]["body"] = body
    if in_reply_to is not None:
        payload["comment"]["in_reply_to_id"] = in_reply_to
    return payload


def test_a_command_in_a_review_is_read_like_a_comment(client: TestClient, redis_conn: redis.Redis) -> None:
    payload = _review_payload("/approve-destroy dns\n\nLooks right to me.")
    assert post(client, "pull_request_review", payload)[0] == 202
    (job,) = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs
    request = job.kwargs["request"]
    review = payload["review"]
    assert (request.command, request.projects, request.via) == ("approve-destroy", ("dns",), "review")
    assert (request.comment_id, request.created_at) == (review["id"], review["submitted_at"])
    assert (request.reviewed_sha, request.source_url) == (review["commit_id"], review["html_url"])
    assert request.number == payload["pull_request"]["number"] and request.is_pr


def test_a_command_in_a_review_thread_is_answered_in_its_thread(client: TestClient, redis_conn: redis.Redis) -> None:
    first = _thread_payload("/plan")
    assert post(client, "pull_request_review_comment", first)[0] == 202
    reply = _thread_payload("/approve-destroy", in_reply_to=first["comment"]["id"])
    reply["comment"]["id"] += 1
    assert post(client, "pull_request_review_comment", reply)[0] == 202
    plan, approve = (job.kwargs["request"] for job in Queue(COMMANDS_QUEUE, connection=redis_conn).jobs)
    assert (plan.command, plan.via, plan.thread) == ("plan", "review_comment", first["comment"]["id"])
    assert (approve.command, approve.thread) == ("approve-destroy", first["comment"]["id"])
    assert approve.reviewed_sha == reply["comment"]["commit_id"]


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("pull_request_review", _review_payload("/approve-destroy", action="edited")),
        ("pull_request_review", _review_payload("/approve-destroy", user_type="Bot")),
        ("pull_request_review", _review_payload("> /approve-destroy")),
        ("pull_request_review", _review_payload("")),
        ("pull_request_review_comment", {**_thread_payload("/approve-destroy"), "action": "edited"}),
        ("pull_request_review_comment", _thread_payload("please /approve-destroy")),
    ],
)
def test_edited_quoted_or_bot_reviews_are_no_commands(
    client: TestClient, redis_conn: redis.Redis, event: str, payload: dict[str, Any]
) -> None:
    assert post(client, event, payload)[0] == 200
    assert queued(redis_conn) == {PLANS_QUEUE: [], COMMANDS_QUEUE: []}


def _command_payload(body: str, user_type: str = "User") -> dict[str, object]:
    payload = load("issue_comment.created.on-pull-request.json")
    payload["installation"] = {"id": 42}
    payload["comment"]["body"] = body
    payload["comment"]["user"]["type"] = user_type
    return payload


def test_slash_command_enqueues_on_the_commands_queue(client: TestClient, redis_conn: redis.Redis) -> None:
    status, _ = post(client, "issue_comment", _command_payload("/approve-destroy dns"))
    assert status == 202
    job = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs[0]
    request = job.kwargs["request"]
    assert (request.command, request.projects) == ("approve-destroy", ("dns",))


@pytest.mark.parametrize(
    ("body", "user_type", "action"),
    [
        ("/approve-destroy", "Bot", "created"),
        ("> /approve-destroy", "User", "created"),
        ("please /approve-destroy", "User", "created"),
        ("/approve-destroy", "User", "edited"),
        ("/approve-destroy", "User", "deleted"),
    ],
)
def test_non_commands_enqueue_nothing(
    client: TestClient, redis_conn: redis.Redis, body: str, user_type: str, action: str
) -> None:
    payload = _command_payload(body, user_type)
    payload["action"] = action
    assert post(client, "issue_comment", payload)[0] == 200
    assert queued(redis_conn) == {PLANS_QUEUE: [], COMMANDS_QUEUE: []}


def test_bad_signatures_are_401_and_enqueue_nothing(client: TestClient, redis_conn: redis.Redis) -> None:
    body = json.dumps(load("pull_request.opened.json")).encode()
    good = signed_headers("pull_request", body)
    unsigned = {k: v for k, v in good.items() if k != "X-Hub-Signature-256"}
    wrong_secret = signed_headers("pull_request", body, secret="not-the-secret")
    sha1_only = dict(unsigned, **{"X-Hub-Signature": "sha1=" + hmac.new(SECRET.encode(), body, "sha1").hexdigest()})
    for headers, content in [
        (unsigned, body),
        (wrong_secret, body),
        (sha1_only, body),
        (good, body.replace(b'"opened"', b'"reopened"')),
        ({**good, "X-Hub-Signature-256": "sha256=" + hashlib.sha256(body).hexdigest()}, body),
    ]:
        assert client.post("/webhook", content=content, headers=headers).status_code == 401
    assert queued(redis_conn) == {PLANS_QUEUE: [], COMMANDS_QUEUE: []}


def test_content_type_size_and_json_errors(client: TestClient) -> None:
    body = b'{"zen": "ok"}'
    assert client.post("/webhook", content=body, headers=signed_headers("ping", body)).status_code == 200
    text = {**signed_headers("ping", body), "Content-Type": "text/plain"}
    assert client.post("/webhook", content=body, headers=text).status_code == 415
    broken = b'{"zen": '
    assert client.post("/webhook", content=broken, headers=signed_headers("ping", broken)).status_code == 400
    array = b"[1, 2]"
    assert client.post("/webhook", content=array, headers=signed_headers("ping", array)).status_code == 400
    no_event = {k: v for k, v in signed_headers("ping", body).items() if k != "X-GitHub-Event"}
    assert client.post("/webhook", content=body, headers=no_event).status_code == 400
    huge = b"x" * (25 * 1024 * 1024 + 1)
    assert client.post("/webhook", content=huge, headers=signed_headers("ping", huge)).status_code == 413
    for event in ("pull_request", "push"):  # the typed pull_request decoder answers as the whole parse does
        assert client.post("/webhook", content=broken, headers=signed_headers(event, broken)).json() == {
            "outcome": "rejected",
            "reason": "body is not valid JSON",
        }
        assert client.post("/webhook", content=array, headers=signed_headers(event, array)).status_code == 400


def test_only_post_reaches_the_webhook(client: TestClient) -> None:
    assert client.get("/webhook").status_code == 405  # the fast path takes POST only; the router the rest


def test_malformed_but_signed_payload_is_400(client: TestClient, redis_conn: redis.Redis) -> None:
    payload = load("pull_request.opened.json")
    del payload["pull_request"]["head"]
    status, answer = post(client, "pull_request", payload)
    assert status == 400 and "malformed" in answer["reason"]


def test_redis_down_is_503(redis_url: str) -> None:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "REDIS_URL": "redis://127.0.0.1:1/0"}
    with TestClient(create_app(settings_module.load(env))) as c:
        status, answer = post(c, "pull_request", load("pull_request.opened.json"))
        assert status == 503, answer
        assert c.get("/readyz").status_code == 503
        assert c.get("/healthz").status_code == 200


def test_installation_events_queue_one_drift_refresh(client: TestClient, redis_conn: redis.Redis) -> None:
    assert post(client, "installation", load("installation.created.json"))[0] == 202
    status, answer = post(client, "installation_repositories", load("installation_repositories.added.json"))
    assert (status, answer["outcome"]) == (200, "duplicate")
    assert queued(redis_conn)[PLANS_QUEUE] == ["drift-targets-refresh"]


def test_metrics_and_readiness(client: TestClient, redis_conn: redis.Redis) -> None:
    from workers.adapters.store import audit

    audit.record(redis_conn, "approved", repo="acme/infra")
    post(client, "ping", load("ping.json"))
    assert client.get("/readyz").json() == {"ready": True}
    text = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    assert 'plangate_deliveries_total{event="ping",outcome="acknowledged"}' in text
    assert "plangate_enqueue_seconds_bucket" in text
    assert 'plangate_gate_decisions_total{decision="approved"} 1.0' in text


def test_each_delivery_is_one_structured_log_line(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="plangate.webhook")
    post(client, "pull_request", load("pull_request.synchronize.json"), **{"X-GitHub-Delivery": "d-123"})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "plangate.webhook"]
    assert len(lines) == 1
    line = lines[0]
    assert line["delivery"] == "d-123" and line["event"] == "pull_request" and line["action"] == "synchronize"
    assert line["repo"] == "Codertocat/Hello-World" and line["outcome"] == "enqueued"
    assert SECRET not in json.dumps(line)


def test_at_warning_level_only_refusals_are_logged(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    """PLANGATE_LOG_LEVEL=warning keeps every refused delivery in the log and drops the accepted ones."""
    caplog.set_level("WARNING", logger="plangate.webhook")
    post(client, "pull_request", load("pull_request.synchronize.json"), **{"X-GitHub-Delivery": "d-ok"})
    post(client, "pull_request", load("pull_request.synchronize.json"), **{"X-Hub-Signature-256": "sha256=00"})
    lines = [(r.levelname, json.loads(r.getMessage())) for r in caplog.records if r.name == "plangate.webhook"]
    assert [(level, line["status"], line["reason"]) for level, line in lines] == [
        ("WARNING", 401, "signature does not match")
    ]


events = st.sampled_from(["pull_request", "issue_comment", "push", "ping", "installation", "zzz", ""])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)


def _mutated_payload(base: dict[str, object], key: str, value: object) -> dict[str, object]:
    return {**base, key: value}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    event=events,
    body=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
    sign=st.booleans(),
    extra=st.dictionaries(
        st.sampled_from(["Content-Type", "X-GitHub-Delivery", "X-Hub-Signature-256", "X-GitHub-Event"]),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
        max_size=2,
    ),
)
def test_random_deliveries_never_5xx(
    client: TestClient, event: str, body: bytes, sign: bool, extra: dict[str, str]
) -> None:
    headers = signed_headers(event, body) if sign else {"Content-Type": "application/json"}
    headers.update(extra)
    assert client.post("/webhook", content=body, headers=headers).status_code < 500


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fixture=st.sampled_from(sorted(p.name for p in Path(FIXTURES).glob("*.json"))),
    key=st.sampled_from(["pull_request", "repository", "installation", "comment", "issue", "action", "ref", "after"]),
    value=json_values,
)
def test_signed_payloads_with_wrong_shapes_never_5xx(client: TestClient, fixture: str, key: str, value: object) -> None:
    payload = _mutated_payload(load(fixture), key, value)
    assert post(client, event_name(fixture), payload)[0] < 500


def test_a_push_names_everyone_who_made_it() -> None:
    """The pusher and every commit author/committer with a GitHub login: none may approve its destroys."""
    from bot.events.pushes import push_authors

    data = json.loads((FIXTURES / "push.default-branch.json").read_text())
    assert push_authors(data) == ["binkkatal"]
    data["sender"]["login"] = "pusher"
    data["commits"].append({"author": {"username": "alice"}, "committer": {"username": "web-flow"}})
    data["commits"].append({"author": {"name": "no login"}, "committer": {}})
    assert push_authors(data) == ["pusher", "binkkatal", "alice", "web-flow"]


def test_metrics_show_what_workers_met_at_github(client: TestClient, redis_conn: redis.Redis) -> None:
    from bot.status_page import render_status_page
    from bot.status_reads import read_rate_limited
    from workers.adapters.github.metrics import Recorder

    recorder = Recorder(redis_conn)
    recorder.retried("POST issues/comments", "502")
    recorder.limited(1002, "POST statuses", "secondary", 42.0)
    recorder.remaining(1002, 4711)
    recorder.job("recovered")
    recorder.paced(1.5)
    text = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    assert 'plangate_github_retries_total{endpoint="POST issues/comments",reason="502"} 1.0' in text
    assert 'plangate_github_rate_limited_total{endpoint="POST statuses",kind="secondary"} 1.0' in text
    assert 'plangate_github_wait_seconds_total{cause="rate-limit"} 42.0' in text
    assert 'plangate_github_wait_seconds_total{cause="pacing"} 1.5' in text
    assert 'plangate_github_ratelimit_remaining{installation="1002"} 4711.0' in text
    assert 'plangate_jobs_total{outcome="recovered"} 1.0' in text
    limited = read_rate_limited(redis_conn)
    assert limited.keys() == {"1002"} and limited["1002"][0] == "secondary" and 30 < limited["1002"][1] <= 42
    page = render_status_page([], {}, [], 0.0, rate_limited=limited)
    assert "GitHub is rate-limiting installation 1002 (secondary limit" in page


def _changed_comment(action: str, author: str, author_type: str, sender: str) -> dict[str, object]:
    payload = load("issue_comment.created.on-pull-request.json")
    payload["installation"] = {"id": 42}
    payload["action"] = action
    payload["comment"]["user"] = {**payload["comment"]["user"], "login": author, "type": author_type}
    payload["comment"]["updated_at"] = "2026-12-02T10:00:00Z"
    payload["sender"] = {**payload["sender"], "login": sender}
    return payload


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_an_apps_comment_changed_by_someone_else_is_queued_to_be_put_back(
    client: TestClient, redis_conn: redis.Redis, action: str
) -> None:
    payload = _changed_comment(action, "plangate[bot]", "Bot", "mallory")
    assert post(client, "issue_comment", payload)[0] == 202
    (job,) = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs
    assert job.func_name == Jobs.RESTORE_COMMENT
    request = job.kwargs["request"]
    assert isinstance(request, CommentChange)
    comment: dict[str, object] = payload["comment"]  # type: ignore[assignment]
    assert (request.action, request.by, request.comment_id) == (action, "mallory", comment["id"])
    assert request.at == ("2026-12-02T10:00:00Z" if action == "edited" else None)


@pytest.mark.parametrize(
    ("author", "author_type", "sender"),
    [
        ("plangate[bot]", "Bot", "plangate[bot]"),  # the App's own edit
        ("alice", "User", "mallory"),  # a person's comment: not plangate's to guard
    ],
)
def test_other_comment_changes_enqueue_nothing(
    client: TestClient, redis_conn: redis.Redis, author: str, author_type: str, sender: str
) -> None:
    assert post(client, "issue_comment", _changed_comment("edited", author, author_type, sender))[0] == 200
    assert queued(redis_conn) == {PLANS_QUEUE: [], COMMANDS_QUEUE: []}


def test_the_approve_button_carries_the_digest_of_the_plan_its_page_showed(
    client: TestClient, redis_conn: redis.Redis
) -> None:
    payload = load("check_run.requested_action.json")
    payload["requested_action"] = {"identifier": "approve-0123456789ab"}
    payload["check_run"]["pull_requests"] = [{"number": 3}]
    assert post(client, "check_run", payload)[0] == 202
    (job,) = Queue(COMMANDS_QUEUE, connection=redis_conn).jobs
    request = job.kwargs["request"]
    assert (request.command, request.via, request.plan_digest) == ("approve-destroy", "check_run", "0123456789ab")


def test_a_synchronize_names_its_pusher_and_an_opening_names_none(client: TestClient, redis_conn: redis.Redis) -> None:
    sync = load("pull_request.synchronize.json")
    sync["sender"] = {**sync["sender"], "login": "mallory"}
    post(client, "pull_request", sync)
    opened = load("pull_request.opened.json")
    opened["pull_request"]["head"]["sha"] = "e" * 40
    post(client, "pull_request", opened)
    requests = [job.kwargs["request"] for job in Queue(PLANS_QUEUE, connection=redis_conn).jobs]
    assert [r.pusher for r in requests] == ["mallory", ""]


def test_a_pr_retargeted_at_another_base_is_planned_again(client: TestClient, redis_conn: redis.Redis) -> None:
    edited = load("pull_request.synchronize.json")
    edited["action"] = "edited"
    assert post(client, "pull_request", edited)[1]["outcome"] == "ignored"  # a title edit: nothing to plan
    edited["changes"] = {"base": {"ref": {"from": "develop"}, "sha": {"from": "1" * 40}}}
    assert post(client, "pull_request", edited)[0] == 202
    (job,) = Queue(PLANS_QUEUE, connection=redis_conn).jobs
    request = job.kwargs["request"]
    assert job.func_name == Jobs.PLAN_PR and str(request.trigger) == f"base-{edited['pull_request']['base']['sha']}"
