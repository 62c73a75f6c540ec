"""Destroy rules end to end: two-person destroys, destroys nothing unlocks, read from the default branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from standin.stack import running_stack
from tests.e2e import applied_state, comment_and_wait, status
from tests.tfproject import main_tf, state_addresses

pytestmark = pytest.mark.e2e

RULES = """version: 1
destroy_rules:
  - match: ["terraform_data.doomed"]
    approvals: 2
  - match: ["terraform_data.vault"]
    never: true
"""


def test_two_person_and_never_rules_hold_and_a_pr_cannot_lift_them(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path, {"keep": "a", "doomed": "b", "vault": "c"})
    vault_tf = 'resource "terraform_data" "vault" {\n  input = "c"\n}\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {
            "infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}),
            "infra/vault.tf": vault_tf,
            ".plangate.yml": RULES,
        }
        repo = gh.create_repo("acme", "infra", files)
        for login in ("alice", "bob", "carol"):
            gh.set_permission(repo, login, "write")
        # The PR drops `doomed` and deletes the rules: it is judged by the rules it wants to change.
        pr = gh.open_pr(
            repo,
            "drop",
            "alice",
            "Drop doomed, relax the rules",
            {"infra/main.tf": main_tf(state, {"keep": "a"}), ".plangate.yml": "version: 1\n"},
        )
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        plan = next(c.body for c in gh.comments_on(repo, pr.number) if "plangate:plan" in c.body)
        assert "destroy_rules[0]: needs 2 more approvals" in plan

        first = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob" in first and "needs 1 more approval" in first
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        again = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "needs 1 more approval" in again  # the same person twice is one approval
        own = comment_and_wait(stack, repo, pr.number, "alice", "/approve-destroy")
        assert "refused" in own and "opened this pull request" in own
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        second = comment_and_wait(stack, repo, pr.number, "carol", "/approve-destroy")
        assert "Every destroy at" in second
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob and @carol")
        vault = gh.open_pr(repo, "vault", "alice", "Drop the vault", {"infra/vault.tf": None})
        status(stack, repo, vault.head_sha, "plangate/destroy", "failure")
        comment_and_wait(stack, repo, vault.number, "bob", "/approve-destroy")
        last = comment_and_wait(stack, repo, vault.number, "carol", "/approve-destroy")
        assert "no approval can unlock" in last
        status(stack, repo, vault.head_sha, "plangate/destroy", "failure", "no approval can unlock")
        merged2 = gh.merge_pr(vault, merged_by="bob")
        status(stack, repo, merged2, "plangate/apply", "failure", "blocked")
        assert "terraform_data.vault" in state_addresses(state)
