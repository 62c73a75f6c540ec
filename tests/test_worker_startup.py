"""`plangate worker` at start-up: no sandbox, a secret file a sandbox could read or an open Redis stops it
with one line; an opt-out is loud; the start-up lines say what each phase's sandbox sees and which
memory cap holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import redis

from bot.status_page import render_status_page
from bot.status_reads import read_sandboxes
from tests.keys import rsa_pem
from workers.adapters.terraform.cgroups import CgroupRoot
from workers.rq_worker import GIL_SWITCH_INTERVAL, preload

pytestmark = pytest.mark.slow


def _worker(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": rsa_pem(),
        "PLANGATE_WORKDIR": str(tmp_path / "work"),
    }
    return subprocess.run(
        [sys.executable, "-m", "plangate", "worker", "--burst"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(result: subprocess.CompletedProcess[str], name: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"plangate: setting {name}: "), result.stderr
    return lines[0]


def test_a_redis_without_password_is_refused(tmp_path: Path) -> None:
    line = _one_line(_worker({"REDIS_URL": "redis://127.0.0.1:6379/0"}, tmp_path), "REDIS_URL")
    assert "has no password" in line


def test_no_sandbox_means_no_worker(tmp_path: Path, redis_url: str) -> None:
    missing = tmp_path / "missing"
    env = {"REDIS_URL": redis_url, "PLANGATE_SANDBOX_PATHS": str(missing)}
    assert str(missing) in _one_line(_worker(env, tmp_path), "PLANGATE_SANDBOX_PATHS")

    granted = tmp_path / "state"
    granted.mkdir()
    (granted / "app.pem").write_text(rsa_pem())
    exposed = {
        "REDIS_URL": redis_url,
        "GITHUB_APP_PRIVATE_KEY": "",
        "GITHUB_APP_PRIVATE_KEY_PATH": str(granted / "app.pem"),
        "PLANGATE_SANDBOX_PATHS": f"{granted}:rw",
    }
    assert "holds a secret" in _one_line(_worker(exposed, tmp_path), "PLANGATE_SANDBOX_PATHS")


def _secret_file_settings(redis_url: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Each setting naming a secret file: what the file holds, and what else that setting needs."""
    return {
        "GITHUB_APP_PRIVATE_KEY_PATH": (rsa_pem(), {"GITHUB_APP_PRIVATE_KEY": ""}),
        "GITHUB_WEBHOOK_SECRET_PATH": ("hook-secret", {}),
        "REDIS_PASSWORD_PATH": (urlparse(redis_url).password or "", {}),
        "GITHUB_CLIENT_SECRET_PATH": ("client-secret", {"GITHUB_CLIENT_ID": "Iv1.abc"}),
        "PLANGATE_STATUS_TOKEN_PATH": ("0123456789abcdef0123456789abcdef", {}),
        "PLANGATE_ENV_FILE": ("GITHUB_APP_ID=1\n", {}),
    }


@pytest.mark.parametrize("phase", ["plan", "apply"])
@pytest.mark.parametrize(
    "setting",
    [
        "GITHUB_APP_PRIVATE_KEY_PATH",
        "GITHUB_WEBHOOK_SECRET_PATH",
        "REDIS_PASSWORD_PATH",
        "GITHUB_CLIENT_SECRET_PATH",
        "PLANGATE_STATUS_TOKEN_PATH",
        "PLANGATE_ENV_FILE",
    ],
)
def test_a_secret_file_either_phase_could_read_means_no_worker(
    tmp_path: Path, redis_url: str, setting: str, phase: str
) -> None:
    content, needs = _secret_file_settings(redis_url)[setting]
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "secret").write_text(content)
    grant = f"PLANGATE_SANDBOX_PATHS_{phase.upper()}"
    env = {"REDIS_URL": redis_url, **needs, setting: str(granted / "secret"), grant: str(granted)}
    line = _one_line(_worker(env, tmp_path), grant)
    assert f"{granted / 'secret'} ({setting}) holds a secret" in line and f"inside the {phase} phase's" in line


def test_the_start_up_line_and_the_status_page_say_what_each_phase_sees(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state, scratch = tmp_path / "state", tmp_path / "scratch"
    env = {
        "REDIS_URL": redis_url,
        "PLANGATE_SANDBOX_PATHS": f"{state}:rw",  # the old README example
        "PLANGATE_SANDBOX_PATHS_PLAN": f"{scratch}:rw",
    }
    result = _worker(env, tmp_path)
    assert result.returncode == 0, result.stderr
    seen = f"plan sees {state} (ro), {scratch} (rw); apply sees {state} (rw)"
    said = rf"sandbox: bubblewrap \((private|no) /proc, one sandbox per (project|step)\); {re.escape(seen)}$"
    assert re.search(said, result.stderr, re.M)
    (recorded,) = read_sandboxes(redis_conn).values()
    assert recorded.endswith(seen)
    assert f"Terraform sandbox: {recorded}" in render_status_page([], {}, [], 0.0, sandboxes={"w": recorded})


def test_an_opted_out_sandbox_is_logged_loudly_and_shown_on_the_status_page(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    result = _worker({"REDIS_URL": redis_url, "PLANGATE_SANDBOX": "off"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "SANDBOX OFF" in result.stderr
    sandboxes = read_sandboxes(redis_conn)
    assert len(sandboxes) == 1 and next(iter(sandboxes.values())).startswith("OFF")
    page = render_status_page([], {}, [], 0.0, sandboxes=sandboxes)
    assert "SANDBOX OFF on" in page and "PLANGATE_SANDBOX=off" in page
    calm = render_status_page([], {}, [], 0.0, sandboxes={"w": "bubblewrap (private /proc)"})
    assert "SANDBOX OFF" not in calm and "Terraform sandbox: bubblewrap" in calm


def test_the_worker_hands_the_gil_over_often_before_it_forks() -> None:
    before = sys.getswitchinterval()
    try:
        preload()  # what `plangate worker` runs before RQ forks its first work horse
        assert sys.getswitchinterval() == GIL_SWITCH_INTERVAL < before
    finally:
        sys.setswitchinterval(before)


def test_the_start_up_log_says_which_memory_cap_holds_and_a_named_cgroup_must_work(
    tmp_path: Path, redis_url: str, cgroups: CgroupRoot
) -> None:
    env = {"REDIS_URL": redis_url, "PLANGATE_TF_MEMORY_MB": "512"}
    off = _worker({**env, "PLANGATE_TF_CGROUP": "off"}, tmp_path)
    assert off.returncode == 0, off.stderr
    assert "terraform: memory cap 512 MB per process (RLIMIT_DATA; no cgroup: PLANGATE_TF_CGROUP=off)" in off.stderr
    named = _worker({**env, "PLANGATE_TF_CGROUP": str(cgroups.path)}, tmp_path)
    assert named.returncode == 0, named.stderr
    assert f"terraform: memory cap 512 MB per step (cgroup v{cgroups.version} under {cgroups.path})" in named.stderr
    line = _one_line(_worker({**env, "PLANGATE_TF_CGROUP": str(tmp_path)}, tmp_path), "PLANGATE_TF_CGROUP")
    assert f"{tmp_path} is neither a cgroup v2 directory nor one of cgroup v1's memory hierarchy" in line
