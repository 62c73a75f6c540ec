"""Run pages and the gate, end to end: with PLANGATE_PUBLIC_URL set, the plan comment and the check runs
link a PR plan's run page, and every later judgement of the same plan (a review's approval, a dismissal,
an `/approve-destroy`) writes its verdict to that run.

Stand-in GitHub, real Redis, real worker processes, real terraform. The run record itself is opened by
the plan job's pipeline; this test opens it under the id the comment links (as that code would), so that
what the approvals write can be read back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from core.runs import RunGate, RunHead
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, bot_bodies, comment_and_wait_closed, infra_repo, next_second, planned, status
from tests.tfproject import main_tf

pytestmark = pytest.mark.e2e

PUBLIC = "https://gate.example.org/plangate"
DOOMED = "terraform_data.doomed"


def _gate(stack: Stack, store: RunStore, run: str, state: str) -> RunGate:
    def probe() -> RunGate | None:
        found = store.read(run)
        gate = found.gate if found is not None else None
        return gate if gate is not None and gate.state == state else None

    return stack.wait_for(f"the run's gate {state}", probe)


def _linked_run(stack: Stack, repo: Repo, number: int) -> str:
    """The run the plan comment links, the only one (a single project)."""
    (body,) = [b for b in bot_bodies(stack, repo, number) if "plangate:plan " in b]
    (run,) = re.findall(rf"\[run page\]\({re.escape(PUBLIC)}/runs/([A-Za-z0-9_-]{{24}})\)", body)
    return str(run)


def test_the_run_page_is_linked_and_follows_every_judgement_of_its_plan(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, extra_env={"PLANGATE_PUBLIC_URL": PUBLIC + "/"}) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        gh.set_permission(repo, "dave", "write")
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        sha = pr.head_sha
        assert "1 to destroy" in status(stack, repo, sha, "plangate/destroy", "failure")
        planned(stack, repo, sha)
        run = _linked_run(stack, repo, pr.number)
        url = f"{PUBLIC}/runs/{run}"
        reports = gh.reports(repo, sha)
        assert reports["plangate/plan"].target_url == url and reports["plangate/destroy"].target_url == url

        store = RunStore(Records(redis_conn, stack.private_key))
        store.start(RunHead(run, "plan", repo.full_name, repo.id, sha, "infra", "infra", "default", number=pr.number))

        next_second()  # approvals come after the plan they approve went out
        review = gh.review(repo, pr.number, "bob", "/approve-destroy", event="APPROVE")
        gate = _gate(stack, store, run, "success")
        assert "approved by @bob" in gate.description
        (verdict,) = gate.verdicts
        assert (verdict.key, verdict.kind, verdict.state, verdict.approvers) == (
            DOOMED,
            "destroy",
            "approved",
            ("bob",),
        )

        gh.dismiss_review(review, "dave", message="not yet")
        gate = _gate(stack, store, run, "failure")
        (verdict,) = gate.verdicts
        assert (verdict.state, verdict.approvers, verdict.note) == ("waiting", (), "needs 1 approval")

        reply, _ = comment_and_wait_closed(stack, repo, pr.number, "dave", "/approve-destroy")
        assert "Approved by @dave" in reply
        (verdict,) = _gate(stack, store, run, "success").verdicts
        assert (verdict.state, verdict.approvers) == ("approved", ("dave",))
        status(stack, repo, sha, "plangate/destroy", "success")
        assert gh.reports(repo, sha)["plangate/destroy"].target_url == url
