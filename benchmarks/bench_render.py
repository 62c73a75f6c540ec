"""Benchmark: parse_plan() + render_plan_comments() on a real 10,000-resource plan (run by hand).

    .venv/bin/python benchmarks/bench_render.py [--creates 10000] [--destroys 2000]

Builds a real plan with terraform/tofu (`terraform_data` with count = N, plus a local state
holding `--destroys` instances no longer in the configuration, so the plan also destroys), times
`show -json plan.bin`, then runs parse + render in a fresh child process and compares:

- time of parse + render vs the `show -json` time (target ≤ 0.25×);
- peak RSS of that child vs the JSON size (target ≤ 3×). Peak RSS is the child's own
  `getrusage(RUSAGE_SELF).ru_maxrss` (whole process: interpreter and imports included); the
  same figure for a child that only imports and reads the files is printed as the baseline,
  and a tracemalloc peak (Python allocations only) is measured in a separate child run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHA = "0" * 40
TIME_TARGET = 0.25
RSS_TARGET = 3.0


def _state(destroys: int, version: str) -> dict[str, object]:
    """A v4 state with `destroys` terraform_data instances that the configuration no longer has."""
    instances = [
        {
            "index_key": i,
            "schema_version": 0,
            "attributes": {"id": str(uuid.UUID(int=i + 1)), "input": None, "output": None, "triggers_replace": None},
            "sensitive_attributes": [],
        }
        for i in range(destroys)
    ]
    resources = [
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "old",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "instances": instances,
        }
    ]
    return {
        "version": 4,
        "terraform_version": version,
        "serial": 1,
        "lineage": str(uuid.uuid4()),
        "outputs": {},
        "resources": resources if destroys else [],
    }


def _run(cmd: list[str], cwd: Path, env: dict[str, str], out: Path | None = None) -> float:
    start = time.perf_counter()
    with open(out, "wb") if out else open(os.devnull, "wb") as sink:
        subprocess.run(cmd, cwd=cwd, env=env, stdout=sink, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - start


def make_plan(tool: str, work: Path, creates: int, destroys: int) -> tuple[float, Path, Path]:
    """Init and plan in `work`; returns (show -json seconds, plan.json, plan.txt)."""
    cfg, state = work / "cfg", work / "state"
    cfg.mkdir()
    state.mkdir()
    (cfg / "main.tf").write_text(
        f'resource "terraform_data" "new" {{\n  count = {creates}\n  input = "value-${{count.index}}"\n}}\n'
    )
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    env["TF_IN_AUTOMATION"] = "1"
    version = json.loads(subprocess.run([tool, "version", "-json"], capture_output=True, check=True).stdout)
    state_file = state / "terraform.tfstate"
    state_file.write_text(json.dumps(_state(destroys, version["terraform_version"])))
    _run([tool, "init", "-input=false", "-no-color"], cfg, env)
    print(f"planning {creates} creates + {destroys} destroys with {tool} …", flush=True)
    took = _run([tool, "plan", "-input=false", "-no-color", f"-state={state_file}", "-out=plan.bin"], cfg, env)
    print(f"  plan: {took:.1f} s", flush=True)
    plan_json, plan_txt = work / "plan.json", work / "plan.txt"
    show = min(_run([tool, "show", "-json", "plan.bin"], cfg, env, plan_json) for _ in range(3))
    _run([tool, "show", "-no-color", "plan.bin"], cfg, env, plan_txt)
    return show, plan_json, plan_txt


def child(mode: str, plan_json: Path, plan_txt: Path) -> None:
    """Runs in a fresh process: prints one JSON line of measurements."""
    from core.plan import parse_plan
    from core.render.plan import render_plan_comments
    from core.results import ProjectResult

    data, text = plan_json.read_bytes(), plan_txt.read_text()
    if mode == "tracemalloc":
        tracemalloc.start()
    start = time.perf_counter()
    bodies: list[str] = []
    destroys = 0
    if mode != "baseline":
        plan = parse_plan(data)
        destroys = len(plan.destroys)
        result = ProjectResult("bench", "bench", "default", "terraform", SHA, plan, text)
        bodies = render_plan_comments([result], pr=1, sha=SHA)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1] if mode == "tracemalloc" else 0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rss": rss_kib * 1024,
                "traced": traced,
                "destroys": destroys,
                "bodies": [len(b) for b in bodies],
            }
        )
    )


def measure(mode: str, plan_json: Path, plan_txt: Path) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", mode, str(plan_json), str(plan_txt)]
    out = subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--creates", type=int, default=10_000)
    parser.add_argument("--destroys", type=int, default=2_000)
    parser.add_argument("--keep", type=Path, help="work in this (new) directory and keep the plan files")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "JSON", "TXT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    tool = shutil.which("terraform") or shutil.which("tofu")
    if tool is None:
        sys.exit("terraform or tofu must be on PATH")
    with tempfile.TemporaryDirectory(prefix="plangate-bench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        show, plan_json, plan_txt = make_plan(tool, work, args.creates, args.destroys)
        size = plan_json.stat().st_size
        runs = [measure("time", plan_json, plan_txt) for _ in range(3)]
        best = min(runs, key=lambda r: float(str(r["seconds"])))
        base = measure("baseline", plan_json, plan_txt)
        traced = measure("tracemalloc", plan_json, plan_txt)
    seconds, rss = float(str(best["seconds"])), int(str(best["rss"]))
    base_rss, peak_py = int(str(base["rss"])), int(str(traced["traced"]))
    mib = 1024 * 1024
    print(f"plan JSON: {size / mib:.1f} MiB, destroys parsed: {best['destroys']}")
    print(f"comment bodies: {best['bodies']}")
    print(f"show -json (best of 3):        {show:.3f} s")
    print(f"parse_plan + render (best of 3): {seconds:.3f} s  = {seconds / show:.2f}× show (target ≤ {TIME_TARGET}×)")
    print(f"peak RSS of the child:         {rss / mib:.1f} MiB = {rss / size:.2f}× JSON (target ≤ {RSS_TARGET}×)")
    print(
        f"  baseline child (imports + file read only): {base_rss / mib:.1f} MiB;"
        f" delta {(rss - base_rss) / mib:.1f} MiB = {(rss - base_rss) / size:.2f}× JSON"
    )
    print(f"tracemalloc peak (Python allocations): {peak_py / mib:.1f} MiB = {peak_py / size:.2f}× JSON")


if __name__ == "__main__":
    main()
