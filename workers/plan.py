"""Terraform/OpenTofu `show -json` plan → classified changes (pure: data in, data out)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Action classes a resource change is sorted into. "unknown" fails closed: it counts as a destroy.
ACTION_CLASSES = ("create", "update", "delete", "replace", "read", "no-op", "forget", "unknown")


@dataclass(frozen=True)
class ResourceChange:
    """One entry of `resource_changes` (or `resource_drift`), classified."""

    address: str
    mode: str  # "managed" | "data"
    type: str
    actions: tuple[str, ...]
    action_class: str  # one of ACTION_CLASSES
    reason: str | None = None  # action_reason, a display label only
    deposed: str | None = None  # deposed object key, when the change targets one
    previous_address: str | None = None  # set when a `moved` block changed the address
    importing: bool = False
    replace_paths: tuple[str, ...] = ()
    sensitive_values: tuple[str, ...] = field(default=(), compare=False)  # plain values to mask

    @property
    def is_destroy(self) -> bool:
        """A managed object is deleted (delete, either replace order, deposed delete) or the action is unknown."""
        return self.mode == "managed" and (self.action_class in ("delete", "replace", "unknown"))


@dataclass(frozen=True)
class OutputChange:
    name: str
    actions: tuple[str, ...]
    sensitive: bool


@dataclass(frozen=True)
class Plan:
    """A whole plan, classified. `error` is set when the JSON could not be read at all."""

    format_version: str
    terraform_version: str
    changes: tuple[ResourceChange, ...]
    drift: tuple[ResourceChange, ...]
    outputs: tuple[OutputChange, ...]
    errored: bool
    applyable: bool | None
    complete: bool | None
    unknown_actions: tuple[str, ...] = ()  # action values this code does not know; they fail closed

    @property
    def destroys(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.is_destroy)

    @property
    def counts(self) -> dict[str, int]:
        """Terraform's summary counts: a replace is one add and one destroy."""
        add = sum(1 for c in self.changes if c.mode == "managed" and c.action_class in ("create", "replace"))
        change = sum(1 for c in self.changes if c.mode == "managed" and c.action_class == "update")
        destroy = len(self.destroys)
        return {"add": add, "change": change, "destroy": destroy}
