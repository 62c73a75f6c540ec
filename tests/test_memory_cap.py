"""PLANGATE_TF_MEMORY_MB for a whole step: a cgroup per step where this host gives one (real cgroups,
real bubblewrap, real terraform), the per-process cap where it does not, and the words a PR reads."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.projects import Project
from core.render.apply import render_apply_result
from workers.adapters.terraform.cgroups import STEP_PREFIX, CgroupRoot
from workers.adapters.terraform.cgroups_probe import probe
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.pipeline import JobDirs, plan
from workers.adapters.terraform.runner import RunResult, run
from workers.adapters.terraform.sandbox import Sandbox, SandboxError
from workers.adapters.terraform.steps import StepResult, Terraform

pytestmark = pytest.mark.slow

MiB = 1024 * 1024
CAP = 256 * MiB
TOOL = shutil.which("tofu") or shutil.which("terraform")
ENV = {"PATH": "/usr/bin:/bin"}
# Three processes of 200 MB each: every one under the cap, together well over it. `tail` keeps a
# line without a newline whole, so it holds all it reads.
HOGS = "for i in 1 2 3; do (head -c 200M /dev/zero | tail >/dev/null) & done; wait; echo all three finished"
# A "provider" the PR ships: terraform starts it at plan time, and it eats memory in three processes.
HOG_PROVIDER = f"#!/bin/sh\n{HOGS}\nexit 1\n"
HOG_TF = """terraform {
  required_providers {
    hog = { source = "example.com/hog/hog", version = "1.0.0" }
  }
}
provider "hog" {}
resource "terraform_data" "a" {}
"""
PLUGIN = "terraform.d/plugins/example.com/hog/hog/1.0.0/linux_amd64/terraform-provider-hog_v1.0.0"


def _sh() -> str:
    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    return sh


def _left(root: CgroupRoot) -> list[Path]:
    return sorted(root.path.glob(f"{STEP_PREFIX}{os.getpid()}-*"))


def _gone(pid: int) -> bool:
    """True once `pid` no longer runs (absent, or a zombie nobody reaped yet); waits up to 10 s."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
        except FileNotFoundError:
            return True
        if state in "ZX":
            return True
        time.sleep(0.05)
    return False


def test_processes_that_together_pass_the_cap_stop_the_sandboxed_step_in_its_cgroup(
    cgroups: CgroupRoot, sandbox: Sandbox, tmp_path: Path
) -> None:
    argv = sandbox.wrap([_sh(), "-c", HOGS], cwd=tmp_path, writable=[tmp_path])
    capped = run(argv, cwd=tmp_path, env=ENV, timeout=120, memory_limit_bytes=CAP, spare_leader=True, cgroups=cgroups)
    assert capped.out_of_memory and not capped.ok and not capped.timed_out
    assert b"all three finished" not in capped.stdout  # stopped whole: the shell waiting for them too
    assert capped.memory_cap == CAP
    assert _left(cgroups) == []

    # The same step with the per-process cap only: each process stays under it, so all three finish.
    each = run(argv, cwd=tmp_path, env=ENV, timeout=120, memory_limit_bytes=CAP, spare_leader=True)
    assert each.ok and b"all three finished" in each.stdout and not each.out_of_memory


def test_a_step_killed_at_its_timeout_leaves_no_cgroup_and_no_process(cgroups: CgroupRoot, tmp_path: Path) -> None:
    escape = "setsid sleep 1000 & echo $!"  # a process that leaves the step's process group
    argv = [_sh(), "-c", f"{escape}; sleep 1000"]
    result = run(argv, cwd=tmp_path, env=ENV, timeout=0.5, memory_limit_bytes=CAP, grace=0.2, cgroups=cgroups)
    assert result.timed_out and not result.out_of_memory
    assert _gone(int(result.stdout)) and _left(cgroups) == []

    done = run(
        [_sh(), "-c", escape],
        cwd=tmp_path,
        env=ENV,
        timeout=30,
        memory_limit_bytes=CAP,
        cgroups=cgroups,
    )
    assert done.ok and _gone(int(done.stdout)) and _left(cgroups) == []


def test_the_cgroups_a_dead_worker_left_are_swept_and_a_live_ones_kept(cgroups: CgroupRoot) -> None:
    dead = 2**22 + 1  # above pid_max's default ceiling: no process has it
    stale, live = cgroups.path / f"{STEP_PREFIX}{dead}-0", cgroups.path / f"{STEP_PREFIX}{os.getpid()}-0"
    stale.mkdir()
    live.mkdir()
    try:
        cgroups.sweep()
        assert not stale.exists() and live.exists()
    finally:
        for made in (stale, live):
            if made.exists():
                made.rmdir()


def _hog_project(tmp_path: Path) -> JobDirs:
    dirs = JobDirs(tmp_path / "job")
    infra = dirs.src / "infra"
    (infra / PLUGIN).parent.mkdir(parents=True)
    (infra / PLUGIN).write_text(HOG_PROVIDER)
    (infra / PLUGIN).chmod(0o755)
    (infra / "main.tf").write_text(HOG_TF)
    dirs.planfile.parent.mkdir(parents=True)
    return dirs


def capped_terraform(tmp_path: Path, sandbox: Sandbox, cap: int, cgroups: CgroupRoot | None) -> Terraform:
    """The runner a worker builds, with the memory cap `cap` in bytes (per step when `cgroups`)."""
    assert TOOL is not None, "these tests need terraform or tofu on PATH"
    cache = tmp_path / "cache"
    cache.mkdir(exist_ok=True)
    env = build_env(passthrough=[], source_env=os.environ, home=sandbox.home(tmp_path / "home"), plugin_cache=cache)
    return Terraform(
        TOOL, env, timeout=120, memory_limit_bytes=cap, sandbox=sandbox, plugin_cache=cache, cgroups=cgroups
    )


def test_a_prs_plan_that_passes_the_cap_in_several_processes_says_so(
    cgroups: CgroupRoot, sandbox: Sandbox, tmp_path: Path
) -> None:
    tf = capped_terraform(tmp_path, sandbox, CAP, cgroups)
    planned = plan(tf, Project("infra", "infra"), _hog_project(tmp_path))
    assert planned.plan is None and planned.error is not None and not planned.plangate_fault
    first, *rest = planned.error.splitlines()
    assert first == f"{Path(tf.tool).name} plan hit the memory cap of 256 MB (PLANGATE_TF_MEMORY_MB)"
    assert "all three finished" not in planned.error and len(rest) <= 21
    assert _left(cgroups) == []


def test_without_a_cgroup_one_process_over_the_cap_is_still_reported(sandbox: Sandbox, tmp_path: Path) -> None:
    """The per-process cap (RLIMIT_DATA): a process whose allocation fails says so, and that is read."""
    tiny = capped_terraform(tmp_path, sandbox, 16 * MiB, None)
    dirs = JobDirs(tmp_path / "job")
    (dirs.src / "infra").mkdir(parents=True)
    (dirs.src / "infra" / "main.tf").write_text('resource "terraform_data" "a" {}\n')
    dirs.planfile.parent.mkdir(parents=True)
    planned = plan(tiny, Project("infra", "infra"), dirs)
    assert planned.error is not None
    assert planned.error.startswith(f"{Path(tiny.tool).name} init hit the memory cap of 16 MB (PLANGATE_TF_MEMORY_MB)")

    argv = sandbox.wrap([_sh(), "-c", "head -c 300M /dev/zero | tail"], cwd=tmp_path, writable=[tmp_path])
    one = run(argv, cwd=tmp_path, env=ENV, timeout=60, memory_limit_bytes=64 * MiB, spare_leader=True)
    assert one.out_of_memory and b"memory exhausted" in one.stderr  # GNU tail's words
    applied = StepResult("apply", replace(one, argv=("terraform", "apply"))).output.splitlines()
    assert applied[-1] == "terraform apply hit the memory cap of 64 MB (PLANGATE_TF_MEMORY_MB)"  # last: tails show it


def test_the_probe_says_which_cap_holds_and_refuses_a_named_directory_it_cannot_use(
    cgroups: CgroupRoot, tmp_path: Path
) -> None:
    off = probe("off")
    assert off.cgroups is None
    assert off.describe(2048) == "memory cap 2048 MB per process (RLIMIT_DATA; no cgroup: PLANGATE_TF_CGROUP=off)"
    named = probe(str(cgroups.path))
    assert named.cgroups == cgroups
    assert named.describe(2048) == f"memory cap 2048 MB per step (cgroup v{cgroups.version} under {cgroups.path})"
    assert _left(cgroups) == []  # the trial step's cgroup is gone
    for unusable in (tmp_path, tmp_path / "missing"):
        with pytest.raises(SandboxError, match=rf"^setting PLANGATE_TF_CGROUP: {unusable} "):
            probe(str(unusable))


def test_an_apply_the_cap_stopped_says_so_after_its_output_however_long() -> None:
    said = b"".join(b"terraform_data.n%d: Creating...\n" % i for i in range(500))
    stopped = RunResult(("terraform", "apply"), -9, said, b"", False, None, 1.0, False, CAP, out_of_memory=True)
    body = render_apply_result(
        project="infra",
        dir="infra",
        sha="a" * 40,
        ok=False,
        output=StepResult("apply", stopped).output,
        summary="",
        approved_by=(),
    )
    assert "terraform apply hit the memory cap of 256 MB (PLANGATE_TF_MEMORY_MB)\n```" in body  # the tail's last line
