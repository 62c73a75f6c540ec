"""How one project's apply ended, as `plangate/apply` and the finish job read it.

Stored (in the apply's phase record, the SHA's outcome hash and the job's result) as its `stored()`
text: the ending, and for a held apply the number of destroys waiting for approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Ending(StrEnum):
    APPLIED = "applied"
    NOOP = "noop"  # the fresh plan had nothing to change
    NOT_APPLIED = "not-applied"  # apply_on_merge: false — planned and reported only
    FAILED = "failed"  # terraform apply (or what came before it) failed; nothing is in doubt
    ERROR = "error"  # died during `terraform apply`: the state must be checked
    LOST = "lost"  # stopped for good before `terraform apply` began: nothing was applied
    BLOCKED = "blocked"  # held: destroys or code run at apply wait for /approve-destroy
    UNTRUSTED = "untrusted"  # held: the gate could not read the plan, so nothing may be applied
    WAITING = "waiting"  # not planned: a project it depends on failed or is held (core.apply_order)
    SUPERSEDED = "superseded"  # not planned: a newer push's apply of the project is held, with this one's changes


HELD = frozenset({Ending.BLOCKED, Ending.UNTRUSTED})


@dataclass(frozen=True)
class ApplyOutcome:
    ending: Ending
    destroys: int = 0  # for a held apply: how many changes wait for approval

    def __post_init__(self) -> None:
        if self.destroys < 0 or (self.destroys and self.ending not in HELD):
            raise ValueError(f"{self.ending} carries no destroys, got {self.destroys}")
        if self.ending is Ending.BLOCKED and not self.destroys:
            raise ValueError("an apply blocked for its destroys waits on at least one")

    def stored(self) -> str:
        return f"{self.ending}:{self.destroys}" if self.ending in HELD else str(self.ending)

    @classmethod
    def read(cls, text: str) -> ApplyOutcome:
        """The outcome `stored()` wrote; ValueError for anything else. `blocked:0` reads as untrusted:
        an apply held for its destroys waits on at least one, so none means the gate could not judge."""
        name, sep, count = text.partition(":")
        try:
            ending = Ending(name)
        except ValueError:
            raise ValueError(f"unknown apply outcome {text!r}") from None
        if (ending in HELD) != bool(sep) or (sep and not (count.isascii() and count.isdigit())):
            raise ValueError(f"unknown apply outcome {text!r}")
        destroys = int(count) if sep else 0
        if ending is Ending.BLOCKED and destroys == 0:
            ending = Ending.UNTRUSTED
        return cls(ending, destroys)


def held(destroys: int, *, trusted: bool) -> ApplyOutcome:
    return ApplyOutcome(Ending.BLOCKED if trusted else Ending.UNTRUSTED, destroys)
