"""A failed apply on main stays in sight until an apply of its project succeeds: its issue, `plangate/apply`
red on later commits, the banner on open PRs, and `/apply` in the issue through the gate."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from core.render.failed_apply import BANNER_MARKER, FAILED_LABEL
from standin.stack import Stack, running_stack
from standin.state import Issue, Repo
from tests.e2e import (
    BASE,
    applied_state,
    bot_bodies,
    comment_and_wait,
    infra_repo,
    next_second,
    planned,
    status,
)
from tests.tfproject import main_tf, state_addresses

pytestmark = pytest.mark.e2e
# Code run at apply is not gated for this project: the hook's script is what fails, not the gate.
CONFIG = "version: 1\nprojects:\n  - name: app\n    dir: infra\n    gate_code_at_apply: false\n"
HOOK = (
    'resource "terraform_data" "fresh" {{\n  input = "c"\n}}\n\n'
    'resource "terraform_data" "hook" {{\n  input = "v1"\n  depends_on = [terraform_data.fresh]\n'
    '  provisioner "local-exec" {{\n    command = "test -f {flag}"\n  }}\n}}\n'
)


def _issues(stack: Stack, repo: Repo) -> list[Issue]:
    with stack.gh.state.lock:
        return [i for (rid, _), i in sorted(stack.gh.state.issues.items()) if rid == repo.id]


def _failed_issue(stack: Stack, repo: Repo) -> Issue:
    def probe() -> Issue | None:
        return next((i for i in _issues(stack, repo) if i.title.startswith("plangate: apply of app failed")), None)

    return stack.wait_for("the failed-apply issue", probe)


def _plan_comment(stack: Stack, repo: Repo, number: int) -> str:
    return next(b for b in bot_bodies(stack, repo, number) if "plangate:plan " in b.partition("\n")[0])


def test_a_failed_apply_stays_red_until_apply_in_its_issue_succeeds(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    flag = tmp_path / "state" / "fixed"
    code = main_tf(state, BASE) + HOOK.format(flag=flag)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={".plangate.yml": CONFIG})
        open_pr = gh.open_pr(repo, "early", "carol", "Tweak", {"infra/main.tf": main_tf(state, {**BASE, "keep": "k"})})
        planned(stack, repo, open_pr.head_sha)
        assert BANNER_MARKER not in _plan_comment(stack, repo, open_pr.number)

        failing = gh.push(repo, "main", {"infra/main.tf": code}, "alice")
        assert "apply failed in app" in status(stack, repo, failing, "plangate/apply", "failure")
        issue = _failed_issue(stack, repo)
        assert issue.title == f"plangate: apply of app failed at {failing[:7]}"
        assert issue.labels == [FAILED_LABEL]
        body = issue.body or ""
        assert "Applied before it failed (1):" in body and "`terraform_data.fresh` created" in body
        assert "test -f" in body and "/apply" in body

        unrelated = gh.push(repo, "main", {"README.md": "docs only\n"}, "alice")
        said = status(stack, repo, unrelated, "plangate/apply", "failure")
        assert "last apply failed in app" in said and f"#{issue.number}" in said

        banner = f"⚠ main's last apply of `app` failed: #{issue.number}"

        def bannered() -> bool:
            lines = _plan_comment(stack, repo, open_pr.number).split("\n")
            return lines[1:3] == [BANNER_MARKER, banner]

        stack.wait_for("the banner on the PR opened before the failure", bannered)
        later = gh.open_pr(repo, "later", "carol", "Later", {"infra/main.tf": code.replace('"c"', '"c2"')})
        planned(stack, repo, later.head_sha)
        assert _plan_comment(stack, repo, later.number).split("\n")[1:3] == [BANNER_MARKER, banner]

        assert "works only in the issue" in comment_and_wait(stack, repo, later.number, "bob", "/apply")

        flag.touch()  # the fix: the script succeeds from now on
        gh.set_permission(repo, "carol", "write")
        started = comment_and_wait(stack, repo, issue.number, "bob", "/apply")
        assert f"/apply: planning `app` at {unrelated[:7]}" in started
        # the hook failed while it was created: terraform replaces the tainted object, a destroy
        status(stack, repo, unrelated, "plangate/apply", "failure", "blocked: 1 gated change")
        assert "terraform_data.hook" in state_addresses(state) and not _closed(stack, repo, issue.number)

        next_second()
        # neither the author of the change that failed nor whoever asked for this apply may approve it
        assert "refused" in comment_and_wait(stack, repo, issue.number, "alice", "/approve-destroy")
        assert "refused" in comment_and_wait(stack, repo, issue.number, "bob", "/approve-destroy")
        assert "terraform_data.hook" in state_addresses(state)
        assert "Approved by @carol" in comment_and_wait(stack, repo, issue.number, "carol", "/approve-destroy")
        status(stack, repo, unrelated, "plangate/apply", "success")
        stack.wait_for("the failed-apply issue closed", lambda: _closed(stack, repo, issue.number))
        assert any("succeeded" in b for b in bot_bodies(stack, repo, issue.number))
        stack.wait_for("the banner gone", lambda: BANNER_MARKER not in _plan_comment(stack, repo, open_pr.number))
        assert redis_conn.hlen(f"plangate:failed-applies:{repo.id}") == 0


def _closed(stack: Stack, repo: Repo, number: int) -> bool:
    return next(i for i in _issues(stack, repo) if i.number == number).state == "closed"
