"""What a terraform/tofu step did, as plangate reads it: the run, plan's exit code and file digest,
and the memory cap's part in a failure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from workers.adapters.terraform.runner import RunResult

MEMORY_SETTING = "PLANGATE_TF_MEMORY_MB"
CAP_TAIL_LINES = 20  # of a step the cap stopped, the comment quotes this much of its output


class TerraformError(RuntimeError):
    """A terraform step whose output the caller needs (show) failed; `result` says how."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class StepResult:
    """One terraform step: the run, plus what plangate reads from it."""

    step: str  # "init" | "plan" | "apply"
    result: RunResult
    has_changes: bool | None = None  # plan only: exit code 2 of -detailed-exitcode
    stale_plan: bool = False  # apply only: "Saved plan is stale" (state moved since the plan)
    digest: str | None = None  # plan only: SHA-256 of the saved plan file

    @property
    def ok(self) -> bool:
        if self.step == "plan":
            return not self.result.timed_out and not self.result.out_of_memory and self.result.returncode in (0, 2)
        return self.result.ok

    @property
    def output(self) -> str:
        """What the step printed, then (last, so a comment quoting the tail shows it) the memory cap
        when that stopped it."""
        capped = self.capped
        return self.result.output if capped is None else f"{self.result.output}\n{capped}".lstrip("\n")

    @property
    def tool(self) -> str:
        return Path(self.result.argv[0]).name if self.result.argv else "terraform"

    @property
    def capped(self) -> str | None:
        """`terraform plan hit the memory cap of N MB (PLANGATE_TF_MEMORY_MB)` when the cap stopped it."""
        note = capped_note(self.result)
        return None if note is None else f"{self.tool} {self.step} {note}"

    def failure(self) -> str:
        """Why this step failed, for the PR comment: the memory cap first when that stopped it, with the
        last lines it printed (a Go runtime's dump of every goroutine adds nothing), else the output."""
        capped = self.capped
        if capped is None:
            return f"{self.tool} {self.step} failed:\n{self.result.output}"
        tail = self.result.output.splitlines()[-CAP_TAIL_LINES:]
        return "\n".join([capped, *(["Its last output:", *tail] if tail else [])])


def capped_note(result: RunResult) -> str | None:
    """`hit the memory cap of N MB (PLANGATE_TF_MEMORY_MB)` when the cap stopped `result`, else None."""
    if not result.out_of_memory or result.memory_cap is None:
        return None
    return f"hit the memory cap of {result.memory_cap // (1024 * 1024)} MB ({MEMORY_SETTING})"


def file_digest(path: Path) -> str:
    """SHA-256 of a file: the saved plan applied must be the one whose JSON was checked."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def require(result: RunResult, what: str) -> None:
    if result.timed_out:
        raise TerraformError(f"terraform {what} timed out after {result.duration:.0f}s", result)
    capped = capped_note(result)
    if capped is not None:
        raise TerraformError(f"terraform {what} {capped}", result)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise TerraformError(f"terraform {what} failed (exit {result.returncode}): {tail}", result)
