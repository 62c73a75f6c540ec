"""A plan runs the pull request's code: the attacks of someone who can push a branch, end to end.

Stand-in GitHub, Redis with a password, real worker processes, real terraform in its sandbox; the
local state file is the ground truth for "nothing was destroyed".
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
import redis

from standin.gitops import Executable, FileContent, Symlink
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import BASE, applied_state, bot_bodies, comment_and_wait, infra_repo, plan_comment_shows, status
from tests.tfproject import main_tf, state_addresses

pytestmark = pytest.mark.e2e
INFRA = "infra@default:infra"  # the project identity approvals name

# A "provider" the PR ships in the implied local mirror: `terraform init` installs it, `plan` runs
# it as the worker's user would. It hunts for secrets and Redis, writes what it found where the test
# can read it, then fails (it speaks no plugin protocol).
EVIL_PROVIDER = """#!/bin/bash
{{
  echo "== environ"; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; echo; done
  echo "== cmdline"; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$f"; echo; done
  echo "== env"; env
  echo "== files"; for f in {files}; do cat "$f" 2>&1; done
  echo "== tree"; echo 'resource "terraform_data" "planted" {{}}' >> ../infra/main.tf
  echo "== redis"
  if exec 3<>/dev/tcp/127.0.0.1/{port}; then
    printf 'SET plangate:forged-by-plan 1\\r\\n' >&3
    read -t 5 -r line <&3; echo "redis answered: $line"
  else
    echo "redis unreachable"
  fi
}} >> {report} 2>&1
exit 1
"""
EVIL_TF = """terraform {
  required_providers {
    evil = { source = "example.com/evil/evil", version = "1.0.0" }
  }
}
provider "evil" {}
"""
PROC_LEAK = 'output "leak" { value = [for f in fileset("/proc", "*/environ") : try(file("/proc/${f}"), "")] }\n'
# A "provider" the PR ships beside the project whose state is shared: at plan time it tries to wipe
# that state, then tells terraform (whose error quotes a plugin's first line) how far it got.
STATE_WIPER = """#!/bin/bash
state='{state}'
: > "$state" 2>/dev/null && emptied=yes || emptied=no
rm -f "$state" 2>/dev/null && deleted=yes || deleted=no
echo planted > "$state.planted" 2>/dev/null && planted=yes || planted=no
echo "state wiper: emptied=$emptied deleted=$deleted planted=$planted"
exit 1
"""


def _secrets(stack: Stack, redis_url: str) -> list[str]:
    """What must never be seen: the App key (and its lines), the webhook secret, the Redis password."""
    key_lines = [line for line in stack.private_key.splitlines() if len(line) > 20 and "-----" not in line]
    password = urlparse(redis_url).password
    assert password, "the test Redis must require a password"
    return [stack.env["GITHUB_WEBHOOK_SECRET"], password, *key_lines]


def test_a_prs_code_finds_no_secret_no_redis_and_moves_no_gate(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    report = tmp_path / "marks" / "evil-report.txt"  # the only host path a plan may write
    with running_stack(tmp_path, redis_url, key_file=True) as stack:
        secrets = _secrets(stack, redis_url)
        repo = infra_repo(stack, state)
        port = urlparse(redis_url).port
        cache = Path(stack.env["PLANGATE_WORKDIR"]) / "checkouts" / f"{repo.id}.git" / "HEAD"  # the object cache
        log = tmp_path / "logs" / "worker-0.log"
        hunted = " ".join([stack.env["GITHUB_APP_PRIVATE_KEY_PATH"], str(log), str(cache)])
        plugin = "evil/terraform.d/plugins/example.com/evil/evil/1.0.0/linux_amd64/terraform-provider-evil_v1.0.0"
        files: dict[str, FileContent] = {
            "infra/main.tf": main_tf(state, {"keep": "a"}) + PROC_LEAK,
            "evil/main.tf": EVIL_TF,
            plugin: Executable(EVIL_PROVIDER.format(files=hunted, port=port, report=report)),
        }
        pr = stack.gh.open_pr(repo, "sneaky", "alice", "Tidy up", files)
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")

        found = report.read_text()
        assert "== environ" in found and "TF_IN_AUTOMATION=1" in found  # the provider ran, in the sandbox
        assert "redis answered: -NOAUTH" in found
        assert redis_conn.get("plangate:forged-by-plan") is None
        assert "No such file or directory" in found  # neither the key file nor the worker's log exist there
        assert f"{cache}: No such file or directory" in found and cache.exists()  # nor the shared git objects
        assert "infra/main.tf: Read-only file system" in found  # the commit's shared tree is read-only
        comments = "\n".join(bot_bodies(stack, repo, pr.number))
        assert "TF_IN_AUTOMATION=1" in comments  # the /proc output reached the comment...
        assert "planted" not in comments  # ...and no project's plan saw the evil one's write
        for secret in secrets:  # ...and neither it nor the provider saw a secret
            assert secret not in found and secret not in comments

        merged = stack.gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure")
        assert "terraform_data.doomed" in state_addresses(state)
        assert not any("Destroys approved" in b for b in bot_bodies(stack, repo, pr.number))


def test_a_prs_plan_leaves_the_state_the_old_readme_example_granted_read_write_untouched(
    tmp_path: Path, redis_url: str
) -> None:
    state = applied_state(tmp_path)
    before = state.read_bytes()
    old_example = {  # PLANGATE_SANDBOX_PATHS=STATE_DIR:rw, no per-phase setting
        "PLANGATE_SANDBOX_PATHS": f"{state.parent}:rw",
        "PLANGATE_SANDBOX_PATHS_PLAN": "",
        "PLANGATE_SANDBOX_PATHS_APPLY": "",
    }
    with running_stack(tmp_path, redis_url, extra_env=old_example) as stack:
        assert "sandbox: bubblewrap" in stack.worker_log()
        assert f"; plan sees {state.parent} (ro); apply sees {state.parent} (rw)" in stack.worker_log()
        gh = stack.gh
        repo = infra_repo(stack, state)
        plugin = "infra/terraform.d/plugins/example.com/evil/evil/1.0.0/linux_amd64/terraform-provider-evil_v1.0.0"
        files: dict[str, FileContent] = {
            "infra/evil.tf": EVIL_TF,
            plugin: Executable(STATE_WIPER.format(state=state)),
        }
        pr = gh.open_pr(repo, "wipe", "alice", "Tidy up", files)
        assert "plans failed: infra" in status(stack, repo, pr.head_sha, "plangate/plan", "failure")
        assert state.read_bytes() == before and not Path(f"{state}.planted").exists()
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed"}
        plan_comment_shows(stack, repo, pr.head_sha)
        (body,) = bot_bodies(stack, repo, pr.number)
        said = " ".join(body.split())  # terraform wraps the plugin's line
        assert "plugin message: state wiper: emptied=no deleted=no planted=no" in said  # it ran, and wrote nothing

        # The same setting still lets the apply after a merge write the state, and plans need no lock.
        added = gh.open_pr(repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {**BASE, "new": "n"})})
        assert "1 to add" in status(stack, repo, added.head_sha, "plangate/plan", "success")
        merged = gh.merge_pr(added, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed", "terraform_data.new"}


def _forge_approval(conn: redis.Redis, repo: Repo, number: int, sha: str, signature: bytes) -> None:
    record = json.dumps([{"approver": "bob", "sha": sha, "pairs": [[INFRA, "terraform_data.doomed"]]}])
    conn.set(f"plangate:approvals:{repo.id}:{number}:{sha}", signature + record.encode())


def test_gate_records_in_redis_unlock_only_when_the_app_sealed_them(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        # Whoever reaches Redis writes an approval (unsigned, then badly signed) and makes mallory the bot.
        _forge_approval(redis_conn, repo, pr.number, pr.head_sha, b"")
        redis_conn.set("plangate:bot-login", "mallory")
        forged = {"v": 2, "approver": "bob", "sha": pr.head_sha, "projects": [INFRA]}
        marker = {**forged, "addresses": {INFRA: ["terraform_data.doomed"]}}
        gh.comment(repo, pr.number, "mallory", f"<!-- plangate:approval {json.dumps(marker)} -->")
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert "terraform_data.doomed" in state_addresses(state)

        # The App's own approval, recorded by the App, unlocks the held apply.
        reply = comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob" in reply
        status(stack, repo, merged, "plangate/apply", "success")
        assert "terraform_data.doomed" not in state_addresses(state)

        # Approved on the PR, then Redis wiped before the merge: the approval comes back from GitHub.
        pr2 = gh.open_pr(repo, "drop2", "alice", "Drop keep", {"infra/main.tf": main_tf(state, {})})
        status(stack, repo, pr2.head_sha, "plangate/destroy", "failure")
        _forge_approval(redis_conn, repo, pr2.number, pr2.head_sha, b"s1.AAAA.")  # ignored, then replaced
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr2.number, "bob", "/approve-destroy")
        status(stack, repo, pr2.head_sha, "plangate/destroy", "success")
        redis_conn.flushdb()
        merged2 = gh.merge_pr(pr2, merged_by="alice")
        status(stack, repo, merged2, "plangate/apply", "success")
        assert state_addresses(state) == set()
        assert "ignored: unsigned or badly signed" in stack.worker_log()


def test_symlinks_out_of_the_checkout_are_refused_and_never_quoted(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    outside = tmp_path / "host-secret.txt"
    outside.write_text("version: 1\nhost-only-content: do-not-quote-me\n")
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "link", "alice", "Link config", {".plangate.yml": Symlink(str(outside))})
        status(stack, repo, pr.head_sha, "plangate/plan", "failure", ".plangate.yml")
        (body,) = bot_bodies(stack, repo, pr.number)
        assert "is a symlink" in body and "do-not-quote-me" not in body and str(outside) not in body

        config = "version: 1\nprojects:\n  - name: web\n    dir: web\n"
        files: dict[str, FileContent] = {".plangate.yml": config, "web": Symlink(str(tmp_path))}
        pr2 = gh.open_pr(repo, "link-dir", "alice", "Link a dir", files)
        status(stack, repo, pr2.head_sha, "plangate/plan", "failure", "project web")
        (body,) = bot_bodies(stack, repo, pr2.number)
        assert "`web` is a symlink" in body and str(tmp_path) not in body
        assert not (tmp_path / ".terraform").exists()


def test_mask_patterns_come_from_the_default_branch_and_cannot_hang_a_job(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    masks = "version: 1\nmask_patterns: ['(a|aa)+$', 'tok-[0-9]+']\n"
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}), ".plangate.yml": masks}
        )
        gh.set_permission(repo, "alice", "write")
        long_line = "a" * 50_000 + "!"
        text = main_tf(state, {"keep": "a", "doomed": "b", "token": "tok-12345", "long": long_line})
        own_masks = "version: 1\nmask_patterns: []\n"  # the PR tries to drop the default branch's masks
        pr = gh.open_pr(repo, "t", "alice", "Add", {"infra/main.tf": text, ".plangate.yml": own_masks})
        status(stack, repo, pr.head_sha, "plangate/plan", "success")
        body = "\n".join(bot_bodies(stack, repo, pr.number))
        assert "tok-12345" not in body and "(sensitive value)" in body
