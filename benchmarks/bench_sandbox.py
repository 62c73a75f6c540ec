"""What the bubblewrap sandbox adds to each terraform call (run by hand).

    .venv/bin/python -m benchmarks.bench_sandbox [--rounds 20] [--resources 20]

The same `Terraform` runner, with and without the sandbox, alternating A/B in one run (this
machine is noisy): `init`, `plan -out` and `show -json` of a 20-resource `terraform_data` project,
(or `--resources`) each timed separately. Prints the median per step and the extra wall time per call.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
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
    return Terraform(tool, env, timeout=300, sandbox=sandbox, writable=writable, plugin_cache=cache)


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


def _round(sandbox: Sandbox, root: Path, resources: int) -> dict[str, float]:
    work = _project(root, resources)
    tf = runner(sandbox, root, work)
    planfile = work / "plan" / "p.tfplan"
    times = {
        "init": _timed(lambda: tf.init(work)),
        "plan": _timed(lambda: tf.plan(work, planfile)),
        "show -json": _timed(lambda: tf.show_json(work, planfile)),
    }
    shutil.rmtree(work)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--resources", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plangate-bench-sandbox-"))
    sandbox = prepare("bwrap", SandboxPaths(), root / "probe")
    results: dict[str, dict[str, list[float]]] = {"off": {}, "bwrap": {}}
    for i in range(args.rounds):
        order = [("off", Sandbox("off")), ("bwrap", sandbox)]
        for name, box in order if i % 2 == 0 else reversed(order):
            for step, seconds in _round(box, root, args.resources).items():
                results[name].setdefault(step, []).append(seconds)
    print(f"{args.rounds} rounds, A/B alternating; median seconds per call ({sandbox.bwrap}, proc={sandbox.proc})")
    print(f"{'step':<12}{'no sandbox':>12}{'bwrap':>10}{'extra':>10}{'ratio':>8}")
    for step in results["off"]:
        bare, boxed = statistics.median(results["off"][step]), statistics.median(results["bwrap"][step])
        print(f"{step:<12}{bare:>12.3f}{boxed:>10.3f}{(boxed - bare) * 1000:>8.1f}ms{boxed / bare:>8.2f}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
