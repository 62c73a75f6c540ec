"""`/accept-drift` end to end: a drift issue, who may accept its drift, and that accepting never applies code.

Drift made by editing the state file's attribute: with the `reality` provider (tests/reality.py), whose
refresh reads each object from a file, terraform reports it in `resource_drift`, the issue names the
attribute before → after, and `/accept-drift` makes the next check clean without an apply.
terraform_data keeps no reality of its own beyond its state (its refresh returns the state as it is),
so a state file of it edited by hand is state and code disagreeing, never drift terraform can see:
`/accept-drift` must find nothing to accept there, and must not "fix" it by applying the code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from rq import Queue

from core import redis_keys
from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget
from standin.stack import Stack, running_stack
from standin.state import Issue, Repo
from tests import reality
from tests.e2e import BOT, answered, comment_and_wait_closed
from tests.tfproject import apply_directly, main_tf

pytestmark = pytest.mark.e2e
CONFIG = 'version: 1\nprojects:\n  - name: app\n    dir: infra\n    drift:\n      schedule: "0 3 * * *"\n'


def _drift_runs(conn: redis.Redis) -> list[dict[str, object]]:
    return [json.loads(r) for r in conn.lrange("plangate:runs", 0, -1) if json.loads(r).get("kind") == "drift"]


def _checked(stack: Stack, conn: redis.Redis, count: int) -> str:
    """The result of the `count`th drift check, once it ran."""

    def newest() -> str | None:
        runs = _drift_runs(conn)
        return str(runs[0]["result"]) if len(runs) >= count else None

    return stack.wait_for(f"drift check #{count}", newest)


def _issue(stack: Stack, repo: Repo) -> Issue:
    (issue,) = [i for (rid, _), i in stack.gh.state.issues.items() if rid == repo.id]
    return issue


def _edit_state(state: Path, name: str, value: str) -> None:
    """Change a resource's `input` in the state file, as someone editing it by hand would."""
    doc = json.loads(state.read_text())
    doc["serial"] += 1
    for resource in doc["resources"]:
        if resource["name"] == name:
            resource["instances"][0]["attributes"]["input"]["value"] = value
    state.write_text(json.dumps(doc, indent=2))


def _attributes(state: Path) -> dict[str, dict[str, object]]:
    doc = json.loads(state.read_text())
    return {r["name"]: r["instances"][0]["attributes"] for r in doc["resources"]}


def _inputs(state: Path) -> dict[str, object]:
    doc = json.loads(state.read_text())
    return {r["name"]: r["instances"][0]["attributes"]["input"]["value"] for r in doc["resources"]}


def test_accept_drift_is_refused_to_who_may_not_approve_destroys_and_never_applies_the_code(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    text = main_tf(state, {"keep": "a"})
    apply_directly(tmp_path / "applied", text)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": text, ".plangate.yml": CONFIG})
        gh.set_permission(repo, "bob", "write")
        gh.set_permission(repo, "rita", "read")
        queue = Queue(PLANS_QUEUE, connection=redis_conn)
        queue.enqueue(Jobs.REFRESH_DRIFT_TARGETS)
        stack.wait_for("the drift targets", lambda: redis_conn.get(redis_keys.DRIFT_TARGETS))
        (target,) = json.loads(redis_conn.get(redis_keys.DRIFT_TARGETS) or b"[]")

        _edit_state(state, "keep", "edited")
        queue.enqueue(Jobs.DRIFT_CHECK, kwargs={"target": DriftTarget.from_plain(target)})
        assert _checked(stack, redis_conn, 1) == "drift"
        issue = _issue(stack, repo)
        assert '- `terraform_data.keep` — update in place\n  - `input`: `"edited"` → `"a"`' in (issue.body or "")
        assert "/accept-drift" not in (issue.body or ""), "no drift outside Terraform: nothing to offer accepting"

        reply, reactions = comment_and_wait_closed(stack, repo, issue.number, "rita", "/accept-drift")
        assert "@rita /accept-drift refused" in reply and "approving destroys needs write" in reply
        assert reactions[-1] == "-1"

        reply, reactions = comment_and_wait_closed(stack, repo, issue.number, "bob", "/accept-drift")
        assert "planning `terraform plan -refresh-only` of `app`" in reply and reactions[-1] == "+1"
        (outcome,) = answered(stack, repo, issue.number, 3, "the outcome of /accept-drift")[2:]
        assert "Nothing to accept in `app`" in outcome and "between the code and the state" in outcome
        assert _inputs(state) == {"keep": "edited"}, "the code's value was not applied"
        assert _checked(stack, redis_conn, 2) == "drift", "a drift check follows the command"
        assert _issue(stack, repo).state == "open"
        accepted = [b for b in (c.body for c in gh.comments_on(repo, issue.number)) if "Drift accepted" in b]
        assert accepted == []
        assert all(c.user.login == BOT for c in gh.comments_on(repo, issue.number) if "plangate:reply" in c.body)


def _targets(stack: Stack, conn: redis.Redis) -> DriftTarget:
    Queue(PLANS_QUEUE, connection=conn).enqueue(Jobs.REFRESH_DRIFT_TARGETS)
    stack.wait_for("the drift targets", lambda: conn.get(redis_keys.DRIFT_TARGETS))
    (target,) = json.loads(conn.get(redis_keys.DRIFT_TARGETS) or b"[]")
    return DriftTarget.from_plain(target)


def test_drift_made_in_the_state_names_its_attribute_and_accepting_it_makes_the_next_check_clean(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    web = tmp_path / "state" / "objects" / "web.json"
    web.parent.mkdir(parents=True)
    env = reality.install(tmp_path / "state" / "provider")
    text = reality.main_tf(state, {"web": web})
    reality.apply_directly(tmp_path / "applied", text, env)
    real = web.read_bytes()
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": text, ".plangate.yml": CONFIG})
        gh.set_permission(repo, "bob", "write")
        target = _targets(stack, redis_conn)

        doc = json.loads(state.read_text())  # someone edits the state by hand
        doc["serial"] += 1
        attributes = doc["resources"][0]["instances"][0]["attributes"]
        attributes.update(env="staging", token="t0k-edited-by-hand")
        state.write_text(json.dumps(doc))
        Queue(PLANS_QUEUE, connection=redis_conn).enqueue(Jobs.DRIFT_CHECK, kwargs={"target": target})
        assert _checked(stack, redis_conn, 1) == "drift"
        body = _issue(stack, repo).body or ""
        assert "- `reality_object.web` — updated outside Terraform" in body
        assert '  - `env`: `"staging"` → `"prod"`' in body
        assert "  - `token`: `(sensitive value)` → `(sensitive value)`" in body
        assert "t0k-" not in body and "`owner`" not in body, "only what changed, and never a secret"
        assert "/accept-drift" in body

        issue = _issue(stack, repo)
        reply, reactions = comment_and_wait_closed(stack, repo, issue.number, "bob", "/accept-drift")
        assert "/accept-drift by @bob" in reply and reactions[-1] == "+1"
        (outcome,) = answered(stack, repo, issue.number, 2, "the outcome of /accept-drift")[1:]
        assert "Drift accepted in `app`" in outcome and "No infrastructure was changed" in outcome
        assert '  - `env`: `"staging"` → `"prod"`' in outcome and "t0k-" not in outcome
        assert _attributes(state)["web"]["env"] == "prod", "the state records reality"
        assert web.read_bytes() == real, "reality itself was not touched"

        assert _checked(stack, redis_conn, 2) == "clean", "the check after the command finds no drift"
        closed = _issue(stack, repo)
        assert closed.state == "closed"
        assert any("No drift at" in b for b in (c.body for c in gh.comments_on(repo, closed.number)))
        applies = [json.loads(r) for r in redis_conn.lrange("plangate:runs", 0, -1)]
        assert [r["result"] for r in applies if r.get("kind") == "accept-drift"] == ["accepted"]
        assert not [r for r in applies if r.get("kind") == "apply"], "no apply of the code"
