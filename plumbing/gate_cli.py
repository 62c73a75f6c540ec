"""`plangate gate PLAN.json [--json]`: the gate's verdict on one `show -json` output, no GitHub needed.

Exit codes: 0 may apply, 3 destroys or code run at apply need approval, 2 cannot decide (unreadable,
errored, unknown action). Code run at apply (provisioners, external programs: core/plan_code.py) needs an
approval exactly like a destroy: a plan with no destroy can still run anything with the apply's credentials.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.gate import Verdict, verdict
from core.gated import destroy_key
from core.plan import Plan, PlanError, parse_plan, summary_line

EXIT_CODES = {"apply": 0, "error": 2, "blocked": 3}
PROG = "plangate gate"


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the gate's arguments; shared by the standalone parser and a `plangate` subcommand."""
    parser.add_argument("plan", metavar="PLAN.json", help="output of `terraform show -json PLANFILE` ('-' reads stdin)")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object instead of text")
    return parser


def build_parser() -> argparse.ArgumentParser:
    return configure(
        argparse.ArgumentParser(
            prog=PROG,
            description="List every destroy and code run at apply in a plan; say if it may apply without approval.",
            epilog="exit status: 0 may apply, 3 destroys or code run at apply need approval, 2 cannot decide",
        )
    )


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2): report it as a code, don't exit
        return e.code if isinstance(e.code, int) else 2
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Gate one plan file as parsed by `configure`'s arguments; print the verdict; return the exit code."""
    try:
        data = sys.stdin.buffer.read() if args.plan == "-" else Path(args.plan).read_bytes()
        plan = parse_plan(data)
    except (OSError, PlanError) as e:
        message = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return _unreadable(f"cannot read {args.plan}: {message}", as_json=args.json)
    result = _with_code_runs(plan, verdict(plan))
    if args.json:
        print(json.dumps(_as_json(plan, result), indent=2))
    else:
        print(_as_text(plan, result))
    return EXIT_CODES[result.kind]


def _with_code_runs(plan: Plan, result: Verdict) -> Verdict:
    """The gate's verdict, blocked as well when an apply would run code: that needs approval like a destroy."""
    if not plan.code_runs or result.kind == "error":
        return result
    reason = f"{len(plan.code_runs)} to run code at apply; needs approval"
    reasons = (*result.reasons, reason) if result.kind == "blocked" else (reason,)
    return Verdict("blocked", result.destroys, reasons)


def _unreadable(message: str, *, as_json: bool) -> int:
    if as_json:
        doc = {"verdict": "error", "destroys": [], "runs_code": [], "counts": {}, "error": message}
        print(json.dumps(doc, indent=2))
    else:
        print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_CODES["error"]


def _as_json(plan: Plan, result: Verdict) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "verdict": result.kind,
        "destroys": [
            {"address": c.address, "deposed": c.deposed, "actions": list(c.actions), "reason": c.reason}
            for c in result.destroys
        ],
        "runs_code": [{"key": r.key, "what": r.what} for r in plan.code_runs],
        "counts": plan.counts,
    }
    if result.kind == "error":
        doc["error"] = "; ".join(result.reasons)
    return doc


def _as_text(plan: Plan, result: Verdict) -> str:
    lines = [f"{PROG}: {result.kind}: {'; '.join(result.reasons)}"]
    if result.destroys:
        lines.append(f"Destroys ({len(result.destroys)}):")
        for c in result.destroys:
            reason = f" ({c.reason})" if c.reason else ""
            lines.append(f"  - {destroy_key(c)}: {' + '.join(c.actions) or '(no actions)'}{reason}")
    if plan.code_runs:
        lines.append(f"Runs code at apply ({len(plan.code_runs)}):")
        lines.extend(f"  - {r.what}" for r in plan.code_runs)
    lines.append(summary_line(plan))
    return "\n".join(lines)
