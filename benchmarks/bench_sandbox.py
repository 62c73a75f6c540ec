"""What the bubblewrap sandbox adds to a project's terraform steps (run by hand).

    .venv/bin/python -m benchmarks.bench_sandbox [--rounds 20] [--resources 20] [--parallel 2]

The same `Terraform` runner three ways, in turn in one run (this machine is noisy): no sandbox; a
sandbox per step (as when a step has an OIDC identity, or no supervisor could be set up); and the
project's init, plan and show in one sandbox (steps.Terraform.one_sandbox, what a plan job does).
`init`, `plan -out` and `show -json` of a `--resources`-resource `terraform_data` project, each timed,
`--parallel` projects at a time (2: both cores busy, where a sandbox start costs most). Prints the
median per step and per project, and each sandboxed way's ratio to no sandbox.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from core.sandbox_paths import SandboxPaths
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.sandbox import Sandbox, prepare
from workers.adapters.terraform.steps import Terraform


def runner(sandbox: Sandbox, root: Path, *writable: Path) -> Terraform:
    """plangate's runner (memory cap and, unless "off", the sandbox) with `writable` open inside it."""
    tool = shutil.which("tofu") or shutil.which("terraform")
    assert tool, "terraform or tofu must be on PATH"
    cache = root / "cache"
    cache.mkdir(exist_ok=True)
    env = build_env(passthrough=[], source_env=os.environ, home=sandbox.home(root), plugin_cache=cache)
    lock = root / "init.lock"  # as a worker's runner: the cache read-only but to an init that must write it
    return Terraform(tool, env, timeout=300, sandbox=sandbox, writable=writable, plugin_cache=cache, init_lock=lock)


def _project(root: Path, n: int = 20) -> Path:
    work = Path(tempfile.mkdtemp(dir=root))
    body = "".join(f'resource "terraform_data" "r{i}" {{\n  input = "v-{i}"\n}}\n' for i in range(n))
    (work / "main.tf").write_text(body)
    (work / "plan").mkdir()
    return work


def _timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def _project_steps(sandbox: Sandbox, root: Path, resources: int) -> dict[str, float]:
    """One project's init, plan and show -json, each timed; in one sandbox when `sandbox` has a supervisor."""
    work = _project(root, resources)
    planfile = work / "plan" / "p.tfplan"
    started = time.perf_counter()
    tf = runner(sandbox, root, work)
    if not sandbox.enabled:  # unsandboxed, init would take the cache's turn every time: bare terraform does not
        tf = replace(tf, init_lock=None)
    with tf.one_sandbox(work, work / "scratch", planfile.parent, work) as tf:
        times = {
            "init": _timed(lambda: tf.init(work)),
            "plan": _timed(lambda: tf.plan(work, planfile)),
            "show -json": _timed(lambda: tf.show_json(work, planfile)),
        }
    times["project"] = time.perf_counter() - started
    shutil.rmtree(work)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--resources", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plangate-bench-sandbox-"))
    boxed = prepare("bwrap", SandboxPaths(), root / "probe")
    assert boxed.supervisor is not None, "this host cannot run a project's steps in one sandbox"
    ways = {"no sandbox": Sandbox("off"), "per step": replace(boxed, supervisor=None), "per project": boxed}
    results: dict[str, dict[str, list[float]]] = {name: {} for name in ways}
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for i in range(args.rounds):
            order = list(ways.items())
            for name, box in order[i % 3 :] + order[: i % 3]:
                n = args.parallel
                done = pool.map(_project_steps, [box] * n, [root] * n, [args.resources] * n)
                for times in done:
                    for step, seconds in times.items():
                        results[name].setdefault(step, []).append(seconds)
    print(
        f"{args.rounds} rounds in turn, {args.parallel} projects at a time, {args.resources} resources; "
        f"median seconds ({boxed.bwrap}, proc={boxed.proc})"
    )
    print(f"{'step':<12}" + "".join(f"{name:>14}" for name in ways) + f"{'per step ×':>12}{'per project ×':>15}")
    for step in results["no sandbox"]:
        medians = [statistics.median(results[name][step]) for name in ways]
        cells = "".join(f"{m:>14.3f}" for m in medians)
        print(f"{step:<12}{cells}{medians[1] / medians[0]:>12.3f}{medians[2] / medians[0]:>15.3f}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
