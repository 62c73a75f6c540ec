"""Change rules and limits end to end: an update a rule gates, and a plan past max_destroys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from standin.stack import running_stack
from tests.e2e import answered, applied_state, comment_and_wait, replies, status
from tests.tfproject import apply_directly, main_tf, state_addresses

pytestmark = pytest.mark.e2e

UPDATES = """version: 1
change_rules:
  - match: ["type:terraform_data"]
    actions: [update]
"""

LIMITS = """version: 1
destroy_rules:
  - match: ["terraform_data.*"]
    approvals: 1
change_limits:
  max_destroys: 1
  approvals: 2
"""


def _inputs(state: Path) -> dict[str, str]:
    resources = json.loads(state.read_text())["resources"]
    return {
        r["name"]: r["instances"][0]["attributes"]["input"]["value"] for r in resources if r["type"] == "terraform_data"
    }


def test_a_change_rule_on_updates_needs_an_approval_for_an_update(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path, {"keep": "a", "other": "b"})
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "other": "b"}), ".plangate.yml": UPDATES}
        repo = gh.create_repo("acme", "infra", files)
        for login in ("alice", "bob"):
            gh.set_permission(repo, login, "write")

        # Merged without an approval: the apply is held, nothing changes.
        unapproved = gh.open_pr(
            repo, "other", "alice", "Change other", {"infra/main.tf": main_tf(state, {"keep": "a", "other": "b2"})}
        )
        status(stack, repo, unapproved.head_sha, "plangate/destroy", "failure", "1 gated change")
        plan = next(c.body for c in gh.comments_on(repo, unapproved.number) if "plangate:plan" in c.body)
        assert "Gated changes (change_rules)" in plan and "`update terraform_data.other`" in plan
        merged = gh.merge_pr(unapproved, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        blocked = next(c.body for c in gh.comments_on(repo, unapproved.number) if "Apply blocked" in c.body)
        assert "1 gated change (change_rules)" in blocked and "update terraform_data.other" in blocked
        assert _inputs(state) == {"keep": "a", "other": "b"}
        held = comment_and_wait(stack, repo, unapproved.number, "bob", "/approve-destroy")
        assert "1 gated change (change_rules)" in held
        status(stack, repo, merged, "plangate/apply", "success")
        assert _inputs(state) == {"keep": "a", "other": "b2"}

        # Approved on the PR: the same update is applied on merge.
        pr = gh.open_pr(
            repo, "keep", "alice", "Change keep", {"infra/main.tf": main_tf(state, {"keep": "a2", "other": "b2"})}
        )
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 gated change")
        reply = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob: 1 gated change (change_rules)" in reply and "- update `terraform_data.keep`" in reply
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob")
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        assert _inputs(state)["keep"] == "a2"


def test_max_destroys_gates_two_destroys_even_when_a_rule_would_allow_them(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path, {"keep": "a", "one": "b", "two": "c"})
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "one": "b", "two": "c"}), ".plangate.yml": LIMITS}
        repo = gh.create_repo("acme", "infra", files)
        for login in ("alice", "bob", "carol"):
            gh.set_permission(repo, login, "write")
        pr = gh.open_pr(repo, "drop", "alice", "Drop two", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "2 to destroy, 1 limit passed")
        plan = next(c.body for c in gh.comments_on(repo, pr.number) if "plangate:plan" in c.body)
        assert "Limits passed (change_limits)" in plan and "2 to destroy in 1 project, over max_destroys: 1" in plan

        first = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob: 2 destroys and 1 passed limit (change_limits)" in first
        assert "change_limits: needs 1 more approval" in first  # the destroys are approved, the limit is not
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "(2 approved)")
        second = comment_and_wait(stack, repo, pr.number, "carol", "/approve-destroy")
        assert "Every gated change at" in second
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob and @carol")
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}


def test_a_limit_only_other_projects_pass_still_holds_each_projects_apply(tmp_path: Path, redis_url: str) -> None:
    states = {}
    for name in ("net", "app"):
        states[name] = tmp_path / "state" / name / "terraform.tfstate"
        apply_directly(tmp_path / "applied" / name, main_tf(states[name], {"keep": "a", "doomed": "b"}))
    limits = "version: 1\nchange_limits:\n  max_destroys: 1\n  approvers: {users: [carol]}\n"
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {f"{n}/main.tf": main_tf(s, {"keep": "a", "doomed": "b"}) for n, s in states.items()}
        repo = gh.create_repo("acme", "infra", {**files, ".plangate.yml": limits})
        for login in ("alice", "bob", "carol"):
            gh.set_permission(repo, login, "write")
        dropped = {f"{n}/main.tf": main_tf(s, {"keep": "a"}) for n, s in states.items()}
        pr = gh.open_pr(repo, "drop", "alice", "Drop one in each", dropped)
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "2 to destroy, 2 limits passed")
        first = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "change_limits: needs 1 more approval" in first  # bob is not among the limit's approvers
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "(2 approved)")
        # Merged anyway: each project's apply sees one destroy, within the limit, yet the PR was past it.
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert all("terraform_data.doomed" in state_addresses(s) for s in states.values())
        comment_and_wait(stack, repo, pr.number, "carol", "/approve-destroy")
        status(stack, repo, merged, "plangate/apply", "success")
        assert all(state_addresses(s) == {"terraform_data.keep"} for s in states.values())


def test_the_button_and_merge_groups_weigh_gated_changes(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path, {"keep": "a", "other": "b"})
    other = 'resource "terraform_data" "other" {\n  input = "b"\n}\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}), "infra/other.tf": other, ".plangate.yml": UPDATES}
        repo = gh.create_repo("acme", "infra", files)
        gh.set_permission(repo, "bob", "write")
        approved = gh.open_pr(repo, "keep", "alice", "Change keep", {"infra/main.tf": main_tf(state, {"keep": "a2"})})
        status(stack, repo, approved.head_sha, "plangate/destroy", "failure", "1 gated change")
        run = gh.check_runs(repo, approved.head_sha)["plangate/destroy"]
        assert run.conclusion == "action_required" and run.summary and "update terraform_data.keep" in run.summary
        (identifier,) = [a["identifier"] for a in run.actions]
        before = len(replies(stack, repo, approved.number))
        gh.request_check_run_action(run, "bob", identifier)
        reply = answered(stack, repo, approved.number, before + 1, "the reply to bob's press")[before]
        assert "Approved by @bob: 1 gated change (change_rules)" in reply
        status(stack, repo, approved.head_sha, "plangate/destroy", "success", "approved by @bob")
        changed = other.replace('"b"', '"b2"')
        unapproved = gh.open_pr(repo, "other", "alice", "Change other", {"infra/other.tf": changed})
        status(stack, repo, unapproved.head_sha, "plangate/destroy", "failure", "1 gated change")

        alone = gh.queue_merge_group(repo, [approved])
        status(stack, repo, alone.head_sha, "plangate/destroy", "success")
        gh.merge_group_done(alone, "dequeued")
        both = gh.queue_merge_group(repo, [approved, unapproved])
        assert "2 gated changes (1 approved)" in status(stack, repo, both.head_sha, "plangate/destroy", "failure")


def test_max_projects_gates_a_pr_changing_more_projects(tmp_path: Path, redis_url: str) -> None:
    states = {}
    for name in ("net", "app"):
        states[name] = tmp_path / "state" / name / "terraform.tfstate"
        apply_directly(tmp_path / "applied" / name, main_tf(states[name], {"keep": "a"}))
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {f"{n}/main.tf": main_tf(s, {"keep": "a"}) for n, s in states.items()}
        repo = gh.create_repo(
            "acme", "infra", {**files, ".plangate.yml": "version: 1\nchange_limits: {max_projects: 1}\n"}
        )
        gh.set_permission(repo, "bob", "write")
        one = gh.open_pr(repo, "one", "alice", "Change net", {"net/main.tf": main_tf(states["net"], {"keep": "b"})})
        status(stack, repo, one.head_sha, "plangate/destroy", "success", "No destroys")  # within the limit
        changed = {f"{n}/main.tf": main_tf(s, {"keep": "b"}) for n, s in states.items()}
        pr = gh.open_pr(repo, "both", "alice", "Change both", changed)
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "2 limits passed")
        plan = next(c.body for c in gh.comments_on(repo, pr.number) if "plangate:plan" in c.body)
        assert "2 projects with changes, over max_projects: 1" in plan
        reply = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob: 2 passed limits (change_limits)" in reply
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob")
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        assert all(_inputs(s) == {"keep": "b"} for s in states.values())
