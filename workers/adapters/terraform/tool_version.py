"""Does the tofu on PATH lock its plugin cache itself (core/tofu_version.py)? Asked once per binary.

When it does, an init that had to write the cache runs again with it writable without taking the
host's turn (`Terraform.init_lock`): OpenTofu serialises the writers of each provider entry itself,
and an init waiting for a turn it does not need would only make every new provider cost the host one
init at a time. What the turn never was is a security boundary: it is the sandbox that keeps the cache
read-only to `plan`, `show` and `apply` (whose code is the PR's: providers, `external` data sources,
`local-exec`) and to every init whose first, read-only run found what it needed, so that no step can
swap a provider binary that another job then runs. That stays as it is, whatever the tool: the first
run of every init is read-only, and only its write retry gets the cache.

The answer is cached per binary path for the life of the process: `workers.context.build` asks before
RQ forks its work horses, so every job inherits it and no step ever asks. A tofu that cannot be run,
hangs, fails or prints what core/tofu_version.py cannot read keeps the turn.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from core.tofu_version import tofu_locks_its_cache
from workers.adapters.terraform.runner import resolve_executable

PROBE_TIMEOUT = 10.0  # seconds for `tofu version -json`, which reads no configuration and no network


def cache_is_concurrent(tool: str, env: Mapping[str, str]) -> bool:
    """Is `tool` (as `Terraform.tool` names it, on `env`'s PATH) an OpenTofu that locks its cache?
    Terraform never is: its plugin cache has no lock of its own."""
    if Path(tool).name != "tofu":
        return False
    try:
        executable = resolve_executable(tool, env)
    except FileNotFoundError:
        return False
    return _locks_its_cache(executable, env.get("PATH", os.defpath))


@cache
def _locks_its_cache(executable: str, path: str) -> bool:
    """`version -json` of `executable`, run from `/` (tofu reports the providers of the directory it
    runs in) with nothing of the job's environment but PATH."""
    try:
        answer = subprocess.run(
            [executable, "version", "-json"],
            cwd="/",
            env={"PATH": path, "CHECKPOINT_DISABLE": "1"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return answer.returncode == 0 and tofu_locks_its_cache(answer.stdout)
