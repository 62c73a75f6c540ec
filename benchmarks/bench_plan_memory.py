"""Benchmark: the worker's peak RSS reading a large `show -json` (run by hand; benchmarks/RESULTS.md quotes it).

    .venv/bin/python benchmarks/bench_plan_memory.py [--mib 79] [--keep DIR]

A real terraform plan of a few `terraform_data` (created, and destroyed from a local state) seeds a plan
JSON that repeats its resources, each instance with its own address and values, up to `--mib`. Each
measurement runs in a fresh child and reports that child's own peak RSS (`ru_maxrss`, the interpreter
and its imports included):

- baseline: imports, nothing read;
- worker: what a plan job does with `show -json`: the runner reads the output of a process (here
  `cat` of the file, through workers.adapters.terraform.runner.run with the worker's max_json), then
  core.plan.parse_plan parses it.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_render import make_plan

MIB = 1024 * 1024
CONFIG = """resource "terraform_data" "new" {{
  count = {n}
  input = {{
    name    = "service-${{count.index}}"
    enabled = true
    size    = count.index
    tags    = {{ team = "platform", env = "prod", owner = "alice", cost = "cc-1234" }}
    ports   = [80, 443, 8080]
  }}
}}
"""


def seed(tool: str, work: Path) -> dict[str, Any]:
    """A real plan: two instances created (with object values), two destroyed."""
    make_plan(tool, work, 2, 2)
    (work / "cfg" / "main.tf").write_text(CONFIG.format(n=2))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    state = work / "state" / "terraform.tfstate"
    subprocess.run(
        [tool, "plan", "-input=false", f"-state={state}", "-out=plan.bin"],
        cwd=work / "cfg",
        env=env,
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [tool, "show", "-json", "plan.bin"], cwd=work / "cfg", env=env, check=True, capture_output=True
    )
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _instance(entry: dict[str, Any], i: int) -> dict[str, Any]:
    """`entry` (a change, a planned or a prior resource) as instance `i`, with values of its own."""
    made = copy.deepcopy(entry)
    name = made["address"].split("[")[0]
    made["address"] = f"{name}[{i}]"
    made["index"] = i
    text = json.dumps(made).replace('"service-0"', f'"service-{i}"').replace('"service-1"', f'"service-{i}"')
    return dict(json.loads(text))


def grow(doc: dict[str, Any], target: int) -> bytes:
    """`doc` with its resources repeated until its JSON is about `target` bytes."""
    changes = doc["resource_changes"]
    planned = doc["planned_values"]["root_module"]["resources"]
    prior = doc.get("prior_state", {}).get("values", {}).get("root_module", {}).get("resources", [])
    per = len(json.dumps(changes[0])) + len(json.dumps(planned[0])) + (len(json.dumps(prior[0])) // 2 if prior else 0)
    n = max(target // per, 1)
    doc = dict(doc)
    doc["resource_changes"] = [_instance(changes[i % len(changes)], i) for i in range(n)]
    doc["planned_values"] = {"root_module": {"resources": [_instance(planned[i % len(planned)], i) for i in range(n)]}}
    if prior:
        doc["prior_state"] = copy.deepcopy(doc["prior_state"])
        doc["prior_state"]["values"]["root_module"]["resources"] = [
            _instance(prior[i % len(prior)], i) for i in range(n // 2)
        ]
    return json.dumps(doc, indent=None).encode()


def child(mode: str, plan_json: Path) -> None:
    """Runs in a fresh process: prints one JSON line of measurements."""
    from core.plan import parse_plan
    from workers.adapters.terraform.runner import run
    from workers.adapters.terraform.steps import Terraform

    changes = 0
    if mode == "grow":  # in a child of its own: a child forked from a big parent starts with its RSS
        tool = shutil.which("terraform") or shutil.which("tofu") or "terraform"
        target = int(float(plan_json.with_suffix(".mib").read_text()) * MIB)
        plan_json.write_bytes(grow(seed(tool, plan_json.parent), target))
    if mode == "worker":
        cat = shutil.which("cat") or "/bin/cat"
        result = run(
            [cat, str(plan_json)],
            cwd=plan_json.parent,
            env={"PATH": os.defpath},
            timeout=600,
            memory_limit_bytes=None,
            max_output=Terraform(tool="terraform", env={}).max_json,
        )
        changes = len(parse_plan(result.stdout).changes)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(json.dumps({"rss": rss, "changes": changes}))


def measure(mode: str, plan_json: Path) -> dict[str, int]:
    cmd = [sys.executable, __file__, "--child", mode, str(plan_json)]
    out = subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
    result: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mib", type=float, default=79.0)
    parser.add_argument("--keep", type=Path, help="work in this (new) directory and keep the plan JSON")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    tool = shutil.which("terraform") or shutil.which("tofu")
    if tool is None:
        sys.exit("terraform or tofu must be on PATH")
    with tempfile.TemporaryDirectory(prefix="plangate-bench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plan_json = work / "big.plan.json"
        plan_json.with_suffix(".mib").write_text(str(args.mib))
        measure("grow", plan_json)
        size = plan_json.stat().st_size
        base, worker = measure("baseline", plan_json), measure("worker", plan_json)
    print(f"plan JSON: {size / MIB:.1f} MiB, {worker['changes']:,} resource changes")
    print(f"baseline child (imports only): {base['rss'] / MIB:.0f} MiB")
    extra = worker["rss"] - base["rss"]
    print(
        f"worker child (read + parse):   {worker['rss'] / MIB:.0f} MiB peak RSS;"
        f" {extra / MIB:.0f} MiB over the baseline = {extra / size:.1f}× the JSON"
    )


if __name__ == "__main__":
    main()
