"""A pull request whose plan eats more memory than PLANGATE_TF_MEMORY_MB across several processes, end
to end: stand-in GitHub, Redis, a real worker process giving each step a cgroup, real terraform."""

from __future__ import annotations

from pathlib import Path

import pytest

from standin.gitops import Executable, FileContent
from standin.stack import running_stack
from tests.e2e import applied_state, bot_bodies, infra_repo, plan_comment_shows, status
from tests.test_memory_cap import HOG_PROVIDER, PLUGIN
from workers.adapters.terraform.cgroups import STEP_PREFIX, CgroupRoot

pytestmark = pytest.mark.e2e
HOG_TF = """terraform {
  required_providers {
    hog = { source = "example.com/hog/hog", version = "1.0.0" }
  }
}
provider "hog" {}
"""


def test_a_plan_stopped_by_the_cap_says_so_in_the_pr(tmp_path: Path, redis_url: str, cgroups: CgroupRoot) -> None:
    state = applied_state(tmp_path)
    settings = {"PLANGATE_TF_MEMORY_MB": "256", "PLANGATE_TF_CGROUP": str(cgroups.path)}
    with running_stack(tmp_path, redis_url, extra_env=settings) as stack:
        assert f"memory cap 256 MB per step (cgroup v{cgroups.version} under {cgroups.path})" in stack.worker_log()
        repo = infra_repo(stack, state)
        files: dict[str, FileContent] = {"infra/hog.tf": HOG_TF, f"infra/{PLUGIN}": Executable(HOG_PROVIDER)}
        pr = stack.gh.open_pr(repo, "hog", "alice", "Add a hungry provider", files)
        assert "plans failed: infra" in status(stack, repo, pr.head_sha, "plangate/plan", "failure")
        plan_comment_shows(stack, repo, pr.head_sha)
        (body,) = bot_bodies(stack, repo, pr.number)
        assert "plan hit the memory cap of 256 MB (PLANGATE_TF_MEMORY_MB)" in body
        assert "all three finished" not in body  # stopped whole, not one process at a time
        assert list(cgroups.path.glob(f"{STEP_PREFIX}*")) == []  # every step's cgroup removed
