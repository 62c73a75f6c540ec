"""Twenty parallel inits needing one provider the plugin cache lacks: installed once, and how long (by hand).

    .venv/bin/python -m benchmarks.bench_plugin_cache [--inits 20] [--provider-mb 20] [--rounds 3]

Each init goes through plangate's `Terraform` runner in the bubblewrap sandbox, as a worker runs it
(first with the cache read-only, again with it writable when it had to install; in the host's turn
unless the tool locks its cache itself, workers/adapters/terraform/tool_version.py), one thread each.
The provider comes from a filesystem mirror named by a CLI config: a zip of `--provider-mb` of
incompressible bytes (as big as a small real provider), so installing it (unzip, hash) costs what it
would; no network. Every project pins it in a `.terraform.lock.hcl`, as a repository that commits its
lock file does (without one terraform and tofu do not trust the cache and install again).

Per round, each against a cache of its own: one init alone on a cold cache; `--inits` at once on a cold
cache (counted: how many had to write, how many installed rather than linked from the cache, the
cache's entries for the provider); the same number again at once on the now warm cache. Prints the
median wall time of each and the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from core.sandbox_paths import SandboxPaths
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.runner import RunResult
from workers.adapters.terraform.sandbox import Sandbox, prepare
from workers.adapters.terraform.steps import StepResult, Terraform
from workers.adapters.terraform.tool_version import cache_is_concurrent

SOURCE = "example.com/bench/fake"  # a hostname of its own: the same mirror path for terraform and tofu
VERSION = "1.0.0"
PLATFORM = "linux_amd64"
MAIN_TF = f'terraform {{\n  required_providers {{\n    fake = {{ source = "{SOURCE}" }}\n  }}\n}}\n'
INSTALLED = f"- Installing {SOURCE} v{VERSION}"  # what init prints when it fills the cache


@dataclass
class Runs:
    """Every run of every init: (project, had the cache writable, result)."""

    seen: list[tuple[Path, bool, RunResult]] = field(default_factory=list)
    guard: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Counted(Terraform):
    """plangate's runner, noting each run it makes (the benchmark's only addition)."""

    runs: Runs = field(default_factory=Runs)

    def _run(
        self,
        workdir: Path,
        args: list[str],
        max_output: int | None = None,
        *,
        writable: tuple[Path, ...] = (),
        readable: tuple[Path, ...] = (),
        stream: bool = False,
    ) -> RunResult:
        result = super()._run(workdir, args, max_output, writable=writable, readable=readable, stream=stream)
        with self.runs.guard:
            self.runs.seen.append((workdir, self.plugin_cache in writable, result))
        return result


def _mirror(root: Path, megabytes: int) -> Path:
    """A packed filesystem mirror holding the provider, and the CLI config that installs from it only."""
    host, namespace, name = SOURCE.split("/")
    packed = root / "mirror" / host / namespace / name / f"terraform-provider-{name}_{VERSION}_{PLATFORM}.zip"
    packed.parent.mkdir(parents=True)
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(f"terraform-provider-{name}_v{VERSION}")
        info.external_attr = 0o755 << 16
        archive.writestr(info, b"#!/bin/sh\nexit 1\n" + os.urandom(megabytes * 1024 * 1024))  # init never runs it
    config = root / "cli.tfrc"
    config.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{root / "mirror"}"\n  }}\n}}\n')
    return config


def _runner(sandbox: Sandbox, root: Path, cache: Path, config: Path, runs: Runs, *projects: Path) -> Counted:
    tool = "tofu" if shutil.which("tofu") else "terraform"
    assert shutil.which(tool), "terraform or tofu must be on PATH"
    cache.mkdir(exist_ok=True)
    source = {**os.environ, "TF_CLI_CONFIG_FILE": str(config)}
    env = build_env(passthrough=["TF_CLI_CONFIG_FILE"], source_env=source, home=sandbox.home(root), plugin_cache=cache)
    return Counted(
        tool, env, timeout=300, sandbox=sandbox, init_lock=root / f"{cache.name}.lock", plugin_cache=cache,
        cache_is_concurrent=cache_is_concurrent(tool, env), writable=projects,
        readable=(root / "mirror", config), runs=runs,
    )  # fmt: skip


def _projects(root: Path, count: int, lock_file: str | None) -> list[Path]:
    made = []
    for _ in range(count):
        work = Path(tempfile.mkdtemp(dir=root, prefix="project-"))
        (work / "main.tf").write_text(MAIN_TF)
        if lock_file is not None:
            (work / ".terraform.lock.hcl").write_text(lock_file)
        made.append(work)
    return made


def _inits(tf: Terraform, projects: list[Path]) -> tuple[float, list[StepResult]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(projects)) as pool:
        results = list(pool.map(tf.init, projects))
    elapsed = time.perf_counter() - started
    failed = [r.output for r in results if not r.ok]
    assert not failed, failed[0]
    return elapsed, results


def _entries(cache: Path) -> int:
    """The provider's entries in the cache (platform directories: one per install that left one)."""
    versions = cache / SOURCE / VERSION
    return sum(1 for p in versions.iterdir() if p.is_dir()) if versions.is_dir() else 0


def _round(sandbox: Sandbox, root: Path, config: Path, lock_file: str, inits: int, n: int) -> dict[str, float]:
    runs = Runs()
    alone_cache, shared = root / f"alone-{n}", root / f"shared-{n}"
    [alone] = _projects(root, 1, lock_file)
    one, _ = _inits(_runner(sandbox, root, alone_cache, config, runs, alone), [alone])
    cold = _projects(root, inits, lock_file)
    runs.seen.clear()
    cold_time, _ = _inits(_runner(sandbox, root, shared, config, runs, *cold), cold)
    writes = [result for _, writable, result in runs.seen if writable]
    installs = sum(INSTALLED in result.output for result in writes)
    entries = _entries(shared)
    warm = _projects(root, inits, lock_file)
    runs.seen.clear()
    warm_time, _ = _inits(_runner(sandbox, root, shared, config, runs, *warm), warm)
    warm_writes = sum(writable for _, writable, _ in runs.seen)
    print(
        f"round {n + 1}: alone {one:.2f}s; {inits} cold {cold_time:.2f}s ({len(writes)} had to write, "
        f"{installs} installed, {entries} cache entry); {inits} warm {warm_time:.2f}s ({warm_writes} wrote)"
    )
    assert installs == 1 and entries == 1 and warm_writes == 0, "the provider must be installed exactly once"
    for path in (alone_cache, shared, alone, *cold, *warm):
        shutil.rmtree(path)
    return {"alone": one, "cold": cold_time, "warm": warm_time}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inits", type=int, default=20)
    parser.add_argument("--provider-mb", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plangate-bench-cache-"))
    sandbox = prepare("bwrap", SandboxPaths(), root / "probe")
    config = _mirror(root, args.provider_mb)
    [first] = _projects(root, 1, None)
    _inits(_runner(sandbox, root, root / "lock-file-cache", config, Runs(), first), [first])
    lock_file = (first / ".terraform.lock.hcl").read_text()
    probe = _runner(sandbox, root, root / "lock-file-cache", config, Runs())
    turn = "none (the tool locks its cache)" if probe.cache_is_concurrent else "taken (init_lock)"
    print(f"{probe.tool}, {args.provider_mb} MB provider from a filesystem mirror, bubblewrap; turn to write: {turn}")
    rounds = [_round(sandbox, root, config, lock_file, args.inits, n) for n in range(args.rounds)]
    alone, cold, warm = (statistics.median(r[k] for r in rounds) for k in ("alone", "cold", "warm"))
    print(f"median of {args.rounds} rounds{'':>22}wall   × one alone")
    for label, seconds in (
        ("1 init alone, cold cache", alone),
        (f"{args.inits} inits at once, cold cache", cold),
        (f"{args.inits} inits at once, warm cache", warm),
    ):
        print(f"  {label:<34}{seconds:6.2f}s{seconds / alone:9.2f}")
    print(f"  {args.inits} at once: cold / warm{'':>16}{cold / warm:7.2f}×")
    cores = os.cpu_count() or 1
    print(f"  ({args.inits} × one alone ÷ {cores} cores: {args.inits * alone / cores:.2f}s)")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
