"""The gate holds against the people it checks: writers who can edit any comment (plangate's too), push
to any branch, and rename what they destroy. Each story is an attack tried end to end (stand-in GitHub,
Redis with a password, real worker processes, real terraform in its sandbox) and ends with the resource
still in the state file and GitHub saying why; a real approval still unlocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from standin import Identity
from standin.stack import Stack, running_stack
from standin.state import Comment, Repo
from tests.e2e import (
    answered,
    applied_state,
    bot_bodies,
    comment_and_wait,
    infra_repo,
    next_second,
    planned,
    replies,
    status,
)
from tests.tfproject import apply_directly, main_tf, state_addresses

pytestmark = pytest.mark.e2e
INFRA = "infra@default:infra"
DOOMED = "terraform_data.doomed"
RESTORED = "plangate put its own text back"


def _bot_comment(stack: Stack, repo: Repo, number: int, contains: str) -> Comment:
    found = [c for c in stack.gh.comments_on(repo, number) if c.user.login == "plangate[bot]" and contains in c.body]
    assert found, f"no plangate comment with {contains!r} on #{number}"
    return found[-1]


def _put_back(stack: Stack, repo: Repo, number: int, comment_id: int, by: str) -> str:
    """Wait until plangate has put its text back into comment `comment_id`, saying who changed it."""

    def probe() -> str | None:
        shown = next((c.body for c in stack.gh.comments_on(repo, number) if c.id == comment_id), "")
        return shown if f"@{by} edited this comment" in shown and RESTORED in shown else None

    return stack.wait_for(f"plangate's text back in comment {comment_id}", probe)


def _unsealed_marker(sha: str, approver: str = "bob") -> str:
    fields = {"v": 3, "approver": approver, "sha": sha, "plan": "", "changes": {INFRA: {DOOMED: "0" * 16}}}
    return f"<!-- plangate:approval {json.dumps(fields, sort_keys=True)} -->"


def _blocked_issue(stack: Stack, repo: Repo) -> int:
    return stack.wait_for(
        "the blocked-apply issue", lambda: next((n for (rid, n) in stack.gh.state.issues if rid == repo.id), None)
    )


def _blocked_comments(stack: Stack, repo: Repo, number: int) -> int:
    return sum(1 for b in bot_bodies(stack, repo, number) if "plangate:apply-blocked" in b)


def test_an_approval_copied_into_the_bots_refusal_never_applies_a_direct_push(tmp_path: Path, redis_url: str) -> None:
    """Story 1a: a direct push with a destroy is blocked; its pusher's own /approve-destroy is refused; she
    edits that refusal to carry bob's genuine sealed approval, copied from another PR, and asks /plan."""
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        other = gh.open_pr(repo, "other", "carol", "Drop doomed too", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, other.head_sha)
        genuine = comment_and_wait(stack, repo, other.number, "bob", "/approve-destroy")
        assert "Approved by @bob" in genuine

        pushed = gh.push(repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a"})}, pusher="alice")
        status(stack, repo, pushed, "plangate/apply", "failure", "blocked")
        issue = _blocked_issue(stack, repo)
        next_second()
        refusal = comment_and_wait(stack, repo, issue, "alice", "/approve-destroy")
        assert "@alice pushed this commit or authored one of its commits" in refusal
        blocked = _blocked_comments(stack, repo, issue)

        forged = _bot_comment(stack, repo, issue, "pushed this commit")
        gh.edit_comment(forged, genuine, editor="alice")
        _put_back(stack, repo, issue, forged.id, "alice")
        next_second()
        comment_and_wait(stack, repo, issue, "alice", "/plan")
        stack.wait_for("the re-run's blocked comment", lambda: _blocked_comments(stack, repo, issue) > blocked)
        assert "blocked" in status(stack, repo, pushed, "plangate/apply", "failure")
        assert DOOMED in state_addresses(state)

        next_second()  # a real approval, by someone who did not push, still unlocks it
        assert "Approved by @bob" in comment_and_wait(stack, repo, issue, "bob", "/approve-destroy")
        status(stack, repo, pushed, "plangate/apply", "success")
        assert DOOMED not in state_addresses(state)


def test_a_marker_planted_in_the_help_reply_never_approves_the_replan(tmp_path: Path, redis_url: str) -> None:
    """Story 1b: the PR's first plan fails, so no approval record exists for its head; its author plants a
    marker in the bot's /help reply, a second harmless PR fixes main, and the PR is planned again on the
    merge."""
    state = applied_state(tmp_path)
    broken = 'resource "terraform_data" "extra" {\n  input = file("${path.module}/missing.txt")\n}\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={"infra/extra.tf": broken})
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        status(stack, repo, pr.head_sha, "plangate/plan", "failure")
        help_reply = comment_and_wait(stack, repo, pr.number, "alice", "/help")
        assert "plangate on acme/infra" in help_reply
        planted = _bot_comment(stack, repo, pr.number, "plangate on acme/infra")
        gh.edit_comment(planted, _unsealed_marker(pr.head_sha) + "\n" + planted.body, editor="alice")
        _put_back(stack, repo, pr.number, planted.id, "alice")

        fix = gh.open_pr(repo, "fix", "bob", "Add the missing file", {"infra/missing.txt": "here"})
        planned(stack, repo, fix.head_sha)
        status(stack, repo, gh.merge_pr(fix, merged_by="bob"), "plangate/apply", "success")
        assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")

        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert DOOMED in state_addresses(state)


def test_an_edited_plan_comment_approves_nothing_after_redis_lost_its_data(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    """Story 1c: the author edits plangate's plan comment to open with an approval marker (the webhook of
    the edit is lost, so nothing puts it back), Redis loses its data, the PR is merged."""
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, pr.head_sha)
        plan_comment = _bot_comment(stack, repo, pr.number, "plangate:plan ")
        gh.edit_comment(plan_comment, _unsealed_marker(pr.head_sha) + "\n" + plan_comment.body, "alice", False)
        redis_conn.flushdb()
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert DOOMED in state_addresses(state)


def test_pushing_onto_a_colleagues_pr_makes_you_its_author(tmp_path: Path, redis_url: str) -> None:
    """Story 2: a writer pushes a destroy onto a colleague's harmless PR, under an identity GitHub maps to
    nobody, and approves it herself."""
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        gh.set_permission(repo, "carol", "write")
        extra = {"infra/extra.tf": 'resource "terraform_data" "extra" {}\n'}
        pr = gh.open_pr(repo, "extra", "carol", "Add extra", extra)
        planned(stack, repo, pr.head_sha)
        ghost = Identity("ghost", "ghost@example.invalid")
        sha = gh.push_pr(
            pr, {"infra/main.tf": main_tf(state, {"keep": "a"})}, pusher="alice", author=ghost, committer=ghost
        )
        planned(stack, repo, sha)
        next_second()
        refusal = comment_and_wait(stack, repo, pr.number, "alice", "/approve-destroy")
        assert (
            "@alice pushed to this pull request's branch" in refusal and "@carol (opened this pull request)" in refusal
        )
        assert "1 to destroy" in status(stack, repo, sha, "plangate/destroy", "failure")

        merged = gh.merge_pr(pr, merged_by="carol")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert DOOMED in state_addresses(state)
        blocked = next(b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-blocked" in b)
        assert "Authors of this change, who may not approve it: @carol (opened this pull request)" in blocked
        assert "@alice (pushed to this pull request's branch" in blocked


def _split(state: Path, resources: dict[str, str]) -> dict[str, str]:
    """The project as two files: the backend (which a PR may point elsewhere) and the resources."""
    text = main_tf(state, resources)
    backend, _, body = text.partition("}\n}\n")
    return {"infra/backend.tf": backend + "}\n}\n", "infra/main.tf": body}


def test_an_approval_never_covers_the_same_address_on_another_backend(tmp_path: Path, redis_url: str) -> None:
    """Story 3: a destroy approved against staging; a second PR (no destroys) points the project's backend at
    production; the first PR, planned again on the merge, would destroy production's object."""
    staging = applied_state(tmp_path)
    production = tmp_path / "state" / "production.tfstate"
    apply_directly(tmp_path / "applied-production", main_tf(production, {"keep": "a", "doomed": "b"}))
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", _split(staging, {"keep": "a", "doomed": "b"}))
        for login in ("alice", "bob", "carol"):
            gh.set_permission(repo, login, "write")
        drop = gh.open_pr(
            repo, "drop", "alice", "Drop doomed", {"infra/main.tf": _split(staging, {"keep": "a"})["infra/main.tf"]}
        )
        planned(stack, repo, drop.head_sha)
        assert "Approved by @bob" in comment_and_wait(stack, repo, drop.number, "bob", "/approve-destroy")
        status(stack, repo, drop.head_sha, "plangate/destroy", "success")

        move = gh.open_pr(
            repo,
            "prod",
            "carol",
            "Point at production",
            {"infra/backend.tf": _split(production, {})["infra/backend.tf"]},
        )
        planned(stack, repo, move.head_sha)
        status(stack, repo, gh.merge_pr(move, merged_by="carol"), "plangate/apply", "success")

        status(stack, repo, drop.head_sha, "plangate/destroy", "failure", "1 to destroy")
        comment = "\n".join(bot_bodies(stack, repo, drop.number))
        assert "An earlier approval no longer covers `terraform_data.doomed`" in comment
        merged = gh.merge_pr(drop, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert DOOMED in state_addresses(production) and DOOMED in state_addresses(staging)


RENAMES = {
    "count": 'resource "terraform_data" "doomed" {\n  count = 0\n  input = "b"\n}\n',
    "moved": "moved {\n  from = terraform_data.doomed\n  to   = terraform_data.renamed\n}\n",
    "for_each": 'resource "terraform_data" "doomed" {\n  for_each = toset(["a"])\n  input    = "b"\n}\n',
}


@pytest.mark.parametrize("rename", sorted(RENAMES))
def test_a_rule_holds_an_object_renamed_in_the_same_change(tmp_path: Path, redis_url: str, rename: str) -> None:
    """Story 4: `never: true` on the old name; the PR renames the object (count = 0: `x` → `x[0]`; a moved
    block to a name not configured; for_each added: the old instance goes, `x["a"]` comes) so that its
    destroy has a new address or the instances new keys; an approval is given."""
    state = applied_state(tmp_path)
    rules = 'version: 1\ndestroy_rules:\n  - match: ["terraform_data.doomed"]\n    never: true\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={".plangate.yml": rules})
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}) + RENAMES[rename]}
        pr = gh.open_pr(repo, "rename", "alice", "Rename first", files)
        planned(stack, repo, pr.head_sha)
        assert "no approval can unlock" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        reply = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "no approval can unlock" in reply
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert DOOMED in state_addresses(state)


def test_a_plan_comment_changed_by_a_writer_is_put_back_and_approves_nothing_blind(
    tmp_path: Path, redis_url: str
) -> None:
    """Story 5: a writer edits the plan comment to read "0 to destroy". Whether or not its webhook arrives,
    the reviewer's approval given on the changed text is refused and plangate's text is back; an
    approval after that (and after an unrelated edit was put back) still unlocks."""
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, pr.head_sha)
        plan_comment = _bot_comment(stack, repo, pr.number, "plangate:plan ")
        true_text = plan_comment.body
        lie = true_text.replace("1 to destroy", "0 to destroy").replace(DOOMED, "terraform_data.keep")
        gh.edit_comment(plan_comment, lie, editor="alice", deliver=False)  # its webhook never arrives
        next_second()
        blind = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "someone else had changed plangate's plan comment" in blind and "Approved" not in blind
        shown = _bot_comment(stack, repo, pr.number, "plangate:plan ").body
        assert "1 to destroy" in shown and "0 to destroy" not in shown

        gh.edit_comment(_bot_comment(stack, repo, pr.number, "plangate:plan "), lie, editor="alice")
        assert "1 to destroy" in _put_back(stack, repo, pr.number, plan_comment.id, "alice")
        gh.comment(repo, pr.number, "carol", "/help")
        help_reply = answered(stack, repo, pr.number, len(replies(stack, repo, pr.number)) + 1)[-1]
        helper = next(c for c in gh.comments_on(repo, pr.number) if c.body == help_reply)
        gh.edit_comment(helper, "nothing to see", editor="alice")
        _put_back(stack, repo, pr.number, helper.id, "alice")

        next_second()
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "success")
        assert DOOMED not in state_addresses(state)


SNEAKY = 'resource "terraform_data" "sneaky" {{\n  provisioner "local-exec" {{\n    command = "touch {ran}"\n  }}\n}}\n'


def test_code_that_runs_at_apply_waits_for_an_approval(tmp_path: Path, redis_url: str) -> None:
    """Story 7: a PR adds a local-exec provisioner: no destroys, but its command would run at apply with
    the apply's credentials. It is held like a destroy until someone approves it."""
    state = applied_state(tmp_path)
    ran = tmp_path / "state" / "provisioner-ran"
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}) + SNEAKY.format(ran=ran)}
        pr = gh.open_pr(repo, "sneaky", "alice", "Add a helper", files)
        planned(stack, repo, pr.head_sha)
        assert "1 runs code at apply" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        comment = "\n".join(bot_bodies(stack, repo, pr.number))
        assert "Runs code at apply" in comment and "local-exec provisioner of terraform_data.sneaky" in comment

        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert not ran.exists() and "terraform_data.sneaky" not in state_addresses(state)
        blocked = next(b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-blocked" in b)
        assert "that runs code at apply — not approved" in blocked

        next_second()
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        status(stack, repo, merged, "plangate/apply", "success")
        assert ran.exists() and "terraform_data.sneaky" in state_addresses(state)


HOOK = (
    'resource "terraform_data" "hook" {\n  provisioner "local-exec" {\n'
    '    command = "sh ${path.module}/deploy.sh"\n  }\n}\n'
)


def test_an_approval_of_code_never_covers_a_script_changed_since(tmp_path: Path, redis_url: str) -> None:
    """A provisioner's configuration says which script, not what it holds: bob approves running deploy.sh;
    a second PR (nothing gated) rewrites deploy.sh; the first PR, planned again on the merge, would run
    the new script."""
    state = applied_state(tmp_path)
    ran = tmp_path / "state"
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={"infra/deploy.sh": f"touch {ran}/one\n"})
        gh.set_permission(repo, "carol", "write")
        hook = {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}) + HOOK}
        pr = gh.open_pr(repo, "hook", "alice", "Add a deploy hook", hook)
        planned(stack, repo, pr.head_sha)
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        status(stack, repo, pr.head_sha, "plangate/destroy", "success")

        rewrite = gh.open_pr(repo, "script", "carol", "Tune the script", {"infra/deploy.sh": f"touch {ran}/two\n"})
        planned(stack, repo, rewrite.head_sha)
        status(stack, repo, gh.merge_pr(rewrite, merged_by="carol"), "plangate/apply", "success")

        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "runs code at apply")
        comment = "\n".join(bot_bodies(stack, repo, pr.number))
        assert "An earlier approval no longer covers `run provisioners of terraform_data.hook`" in comment
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert not (ran / "one").exists() and not (ran / "two").exists()


def test_a_merge_that_loosens_the_policy_is_judged_by_the_policy_it_changes(tmp_path: Path, redis_url: str) -> None:
    """A PR allows self-approval in `.plangate.yml` and destroys; merged unapproved, its apply is held, and
    its author's /approve-destroy there is judged by the policy before the merge, not by her own."""
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        loose = "version: 1\ndestroy_approvers:\n  allow_self_approval: true\n"
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}), ".plangate.yml": loose}
        pr = gh.open_pr(repo, "loosen", "alice", "Loosen and drop", files)
        planned(stack, repo, pr.head_sha)
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        next_second()
        refusal = comment_and_wait(stack, repo, pr.number, "alice", "/approve-destroy")
        assert "@alice opened this pull request; destroys need someone else's approval" in refusal
        assert "blocked" in status(stack, repo, merged, "plangate/apply", "failure")
        assert DOOMED in state_addresses(state)
