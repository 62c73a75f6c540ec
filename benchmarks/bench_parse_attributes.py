"""Benchmark: what a run page's attributes cost next to the gate's parse of a large plan (run by hand).

    .venv/bin/python -m benchmarks.bench_parse_attributes [--mib 18] [--rounds 5] [--plan PLAN.json]

A plan JSON grown from a real terraform plan (benchmarks.bench_plan_memory: `terraform_data` with object
values, half created and half destroyed) is read in fresh children, each timing (CPU seconds of the
process, which the neighbours' load moves less than wall time; best of the rounds):

- parse: core.plan.parse_plan as a PR's plan runs it (no attributes), the collector paused as the worker
  pauses it (workers.adapters.terraform.pipeline.gc_paused);
- page: core.run_plan.run_plan with that plan's JSON as `source`: read again, every drawn resource's
  attributes walked, masked and cut, at most RESOURCE_CAP resources;
- page, no cap: the same for every resource of the plan, which is what parsing with every change's
  attributes would add to the parse itself (why the parse does not: benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIB = 1024 * 1024
STEPS = ("parse", "page", "page, no cap")


def child(plan_json: Path) -> None:
    """Runs in a fresh process: prints one JSON line of measurements."""
    from core.plan import parse_plan
    from core.results import ProjectResult
    from core.run_plan import run_plan

    data = plan_json.read_bytes()
    gc.disable()
    start = time.process_time()
    plan = parse_plan(data)
    parsed = time.process_time() - start
    gc.enable()
    result = ProjectResult("bench", "bench", "default", "terraform", "0" * 40, plan)
    start = time.process_time()
    page = run_plan(result, source=data)
    drawn = time.process_time() - start
    start = time.process_time()
    run_plan(result, source=data, cap=len(plan.changes))
    everything = time.process_time() - start
    assert page is not None
    found = {
        "parse": parsed,
        "page": drawn,
        "page, no cap": everything,
        "changes": len(plan.changes),
        "drawn": len(page.resources),
        "attributes": sum(len(r.attributes) for r in page.resources),
    }
    print(json.dumps(found))


def measure(plan_json: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_parse_attributes", "--child", str(plan_json)]
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(cmd, capture_output=True, check=True, text=True, cwd=root).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def grown(mib: float, work: Path) -> Path:
    from benchmarks.bench_plan_memory import grow, seed

    tool = shutil.which("terraform") or shutil.which("tofu")
    if tool is None:
        sys.exit("terraform or tofu must be on PATH (or pass --plan)")
    plan_json = work / "big.plan.json"
    plan_json.write_bytes(grow(seed(tool, work), int(mib * MIB)))
    return plan_json


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mib", type=float, default=18.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plan", type=Path, help="read this plan JSON instead of growing one")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    with tempfile.TemporaryDirectory(prefix="plangate-bench-") as tmp:
        plan_json = args.plan or grown(args.mib, Path(tmp))
        size = plan_json.stat().st_size
        runs = [measure(plan_json) for _ in range(args.rounds)]
    last = runs[-1]
    print(
        f"plan JSON: {size / MIB:.1f} MiB, {last['changes']:,} changes;"
        f" the page draws {last['drawn']:,} of them, {last['attributes']:,} attributes"
    )
    parse = min(r["parse"] for r in runs)
    for step in STEPS:
        best = min(r[step] for r in runs)
        print(f"{step:>13} (CPU s, best of {args.rounds}): {best:.3f} s = {best / parse:.2f}× the parse")


if __name__ == "__main__":
    main()
