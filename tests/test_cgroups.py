"""Finding the worker's own cgroup and whether it is plangate's, what a step cgroup's files get, and
how a cgroup that cannot be made or joined ends a step: as plangate's error, never uncapped."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from core.projects import Project
from tests.test_memory_cap import capped_terraform
from workers.adapters.terraform.cgroups import JOIN_FAILED, CgroupRoot, StepCgroup, oom_kill_count
from workers.adapters.terraform.cgroups_probe import own_cgroups
from workers.adapters.terraform.pipeline import JobDirs, plan
from workers.adapters.terraform.sandbox import Sandbox

V2 = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V1_MEMORY_OF_A_CONTAINER = "41 31 0:33 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
V1_CPU = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"


def test_a_containers_own_cgroup_is_plangates_and_a_login_sessions_is_not() -> None:
    root = Path("/sys/fs/cgroup")
    assert own_cgroups(V2, "0::/\n") == [(2, root, True)]
    assert own_cgroups(V2, "0::/plangate-worker\n") == [(2, root / "plangate-worker", True)]  # moved into its leaf
    session = "0::/user.slice/user-1000.slice/session-3.scope\n"
    assert own_cgroups(V2, session) == [(2, root / "user.slice/user-1000.slice/session-3.scope", False)]
    docker_v1 = "5:cpu:/docker/abc\n4:memory:/docker/abc\n"
    assert own_cgroups(V1_CPU + V1_MEMORY_OF_A_CONTAINER, docker_v1) == [(1, root / "memory", True)]
    hybrid = V1_MEMORY_OF_A_CONTAINER.replace("/docker/abc", "/") + V2.replace(
        "/sys/fs/cgroup ", "/sys/fs/cgroup/unified "
    )
    assert own_cgroups(hybrid, "4:memory:/jobs/7\n0::/\n") == [
        (2, root / "unified", True),
        (1, root / "memory/jobs/7", False),
    ]
    assert own_cgroups(V1_MEMORY_OF_A_CONTAINER, "4:memory:/elsewhere\n") == []  # not under what is mounted


def test_a_cgroup_systemd_delegated_is_plangates(tmp_path: Path) -> None:
    service = tmp_path / "plangate.service"
    service.mkdir()
    try:
        os.setxattr(service, "user.delegate", b"1")
    except OSError as exc:
        pytest.skip(f"{tmp_path} keeps no user xattrs ({exc.strerror})")
    mounted = V2.replace("/sys/fs/cgroup", str(tmp_path).replace(" ", "\\040"))
    assert own_cgroups(mounted, "0::/plangate.service\n") == [(2, service, True)]
    assert own_cgroups(mounted, "0::/plangate.service/plangate-worker\n") == [(2, service / "plangate-worker", True)]
    assert own_cgroups(mounted, "0::/other.service\n") == [(2, tmp_path / "other.service", False)]


def test_oom_kills_are_read_from_either_version() -> None:
    v2_events = "low 0\nhigh 0\nmax 31\noom 3\noom_kill 2\noom_group_kill 1\n"
    assert oom_kill_count(v2_events) == 2
    assert oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n") == 1
    assert oom_kill_count("oom_kill_disable 0\nunder_oom 0\n") == 0  # Linux < 4.13


def test_a_step_cgroup_is_capped_without_swap_and_on_v2_killed_whole(tmp_path: Path) -> None:
    for version, files in (
        (2, ("memory.max", "memory.swap.max")),
        (1, ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")),
    ):
        made = tmp_path / f"v{version}"
        made.mkdir()
        for name in files[1:]:
            (made / name).write_text("max")  # present where the kernel accounts swap
        StepCgroup(made, version, "/bin/sh").limit(300 * 1024 * 1024)  # type: ignore[arg-type]
        written = {f.name: f.read_text() for f in made.iterdir()}
        swap = {2: "0", 1: str(300 * 1024 * 1024)}[version]
        assert written == {
            files[0]: str(300 * 1024 * 1024),
            files[1]: swap,
            **({"memory.oom.group": "1"} if version == 2 else {}),
        }


def _dirs(tmp_path: Path) -> JobDirs:
    dirs = JobDirs(tmp_path / "job")
    (dirs.src / "infra").mkdir(parents=True)
    (dirs.src / "infra" / "main.tf").write_text('resource "terraform_data" "a" {}\n')
    dirs.planfile.parent.mkdir(parents=True)
    return dirs


def test_a_cgroup_that_cannot_be_made_or_joined_is_an_error_of_ours(sandbox: Sandbox, tmp_path: Path) -> None:
    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    gone = CgroupRoot(tmp_path / "removed-since-start-up", 2, sh)
    planned = plan(
        capped_terraform(tmp_path, sandbox, 256 * 1024 * 1024, gone), Project("infra", "infra"), _dirs(tmp_path)
    )
    assert planned.plangate_fault and planned.plan is None and planned.error is not None
    assert planned.error.startswith("setting PLANGATE_TF_CGROUP: cannot make a memory cgroup in ")

    refuses = tmp_path / "refusing-sh"  # the kernel refused the pid: what the joining shell then says
    refuses.write_text(f'#!/bin/sh\necho "{JOIN_FAILED.decode()} $4" >&2\nexit 125\n')
    refuses.chmod(0o755)
    (tmp_path / "root").mkdir()
    unjoinable = CgroupRoot(tmp_path / "root", 1, str(refuses))
    tf = capped_terraform(tmp_path, sandbox, 256 * 1024 * 1024, unjoinable)
    planned = plan(tf, Project("infra", "infra"), _dirs(tmp_path / "again"))
    assert planned.plangate_fault and planned.error is not None
    assert planned.error.startswith("setting PLANGATE_TF_CGROUP: the step's memory cap could not be set")
