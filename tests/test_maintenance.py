"""The checkout sweep removes only stale per-job checkouts, never the shared home or plugin cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from workers.adapters.checkout import workdir_for
from workers.adapters.trees import IDLE_AFTER
from workers.maintenance import STALE_AFTER, sweep_workdirs


def test_sweep_removes_only_stale_runs(tmp_path: Path) -> None:
    now = 1_000_000.0
    old = workdir_for(tmp_path / "checkouts", 1, "pr-1", "a" * 40, "dns") / "run-old"
    fresh = workdir_for(tmp_path / "checkouts", 1, "pr-2", "b" * 40, "dns") / "run-new"
    shared = [tmp_path / "home", tmp_path / "plugin-cache"]
    for path in (old, fresh, *shared):
        path.mkdir(parents=True)
        (path / "f").write_text("x")
    for path in (old, *shared, tmp_path / "checkouts"):
        os.utime(path, (now - STALE_AFTER - 10, now - STALE_AFTER - 10))
    os.utime(fresh, (now - 60, now - 60))
    assert sweep_workdirs(str(tmp_path), now=now) == 1
    assert not old.exists() and fresh.exists() and all(p.exists() for p in shared)


def test_sweep_removes_idle_shared_trees(tmp_path: Path) -> None:
    now = 1_000_000.0
    idle, used = tmp_path / "trees" / "1" / ("a" * 40), tmp_path / "trees" / "1" / ("b" * 40)
    for tree, age in ((idle, IDLE_AFTER + 10), (used, 60)):
        (tree / "infra").mkdir(parents=True)
        use = tree.with_name(f"{tree.name}.use")
        use.write_text("")
        os.utime(use, (now - age, now - age))
    assert sweep_workdirs(str(tmp_path), now=now) == 1
    assert not idle.exists() and used.exists()


def test_sweep_removes_a_run_whose_project_sandbox_control_directory_its_owner_cannot_list(tmp_path: Path) -> None:
    """A worker killed while a project sandbox ran leaves its control directory at mode 0311. The sweep
    runs here without the capabilities that let root read any directory, as a worker's user would."""
    now = 1_000_000.0
    run = workdir_for(tmp_path / "checkouts", 1, "pr-1", "a" * 40, "dns") / "run-killed"
    ctl = run / "steps-x"
    ctl.mkdir(parents=True)
    (ctl / "0123abcd.out").write_text("")
    ctl.chmod(0o311)
    os.utime(run, (now - STALE_AFTER - 10, now - STALE_AFTER - 10))
    sweep = f"from workers.maintenance import sweep_workdirs; print(sweep_workdirs({str(tmp_path)!r}, now={now}))"
    uncapable = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [*uncapable, sys.executable, "-c", sweep], capture_output=True, text=True, check=True, cwd=Path.cwd()
    )
    assert done.stdout.strip() == "1" and not run.exists()
