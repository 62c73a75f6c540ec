"""scripts/ensure-tools: what `make test` and `make demo` need is installed when it can be, else named in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "ensure-tools"


def _bin(tmp_path: Path, *, uid: int, present: tuple[str, ...] = ()) -> Path:
    """A PATH holding the shell tools the script uses, a fake `id`, a recording `apt-get`, and `present`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "cat"):
        (bin_dir / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    scripts = {
        "id": f"echo {uid}",
        "apt-get": f'echo "$*" >> {tmp_path}/apt.log',
        **{name: "true" for name in present},
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _run(bin_dir: Path, *specs: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")}
    return subprocess.run(
        [str(bin_dir / "bash"), str(SCRIPT), "make test", *specs], env=env, capture_output=True, text=True, timeout=30
    )


def test_everything_present_says_nothing(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, uid=1000, present=("git", "tofu")), "git:git", "terraform|tofu:-")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_user_without_root_gets_one_line_naming_every_missing_tool(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, uid=1000), "git:git", "chromium:chromium", "terraform|tofu:-:https://opentofu.org")
    assert result.returncode == 1
    assert result.stderr == (
        "make test needs: git (Debian: git), chromium (Debian: chromium), terraform or tofu (https://opentofu.org)\n"
    )
    assert not (tmp_path / "apt.log").exists()


def test_root_installs_the_missing_packages_in_one_apt_run(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, uid=0, present=("git",)), "git:git", "chromium:chromium", "redis-server:redis-server")
    assert result.returncode == 0, result.stderr
    assert "installing chromium redis-server with apt" in result.stdout
    assert (tmp_path / "apt.log").read_text().splitlines() == ["update -qq", "install -y -qq chromium redis-server"]


def test_a_tool_apt_cannot_give_stops_before_installing_anything(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, uid=0), "chromium:chromium", "terraform|tofu:-")
    assert result.returncode == 1
    assert result.stderr == "make test needs: terraform or tofu\n"
    assert not (tmp_path / "apt.log").exists()
