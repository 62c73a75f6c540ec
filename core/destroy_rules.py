"""Destroy rules (pure): which destroys need more than one approval, from whom, and which none can unlock.

```yaml
destroy_rules:
  - match: ["aws_db_instance.*", "module.prod.*"]   # address globs; "type:aws_s3_bucket" a resource type
    approvals: 2                                    # distinct approvers, none of them an author
    approvers: {teams: [acme/dba]}                  # narrows who counts for these destroys
  - match: ["aws_s3_bucket.tfstate"]
    never: true                                     # no approval unlocks it: change the rule first
```

A destroy with no matching rule needs one approval from anyone `destroy_approvers` allows. A destroy
several rules match needs every one of them; `change_rules` (core.change_rules) are weighed the same way,
each for the actions it names, and the `change_limits` are one more rule that only a limit matches.
A rule sees every name the condemned object has in the
plan, so renaming it in the same change cannot dodge it: the address, the address before a move
(`moved` blocks, and the implicit move when `count`/`for_each` is added), and both without instance
keys (`x` covers `x[0]`, `x["a"]` and `module.m["k"].x`). Address globs match a whole name (`*`
crosses dots and brackets; `?` one character; `[...]` a class), so `module.prod.*` covers everything
in that module. Rules come from the default branch only, like the rest of the policy: a PR that edits
them is judged by the rules it wants to change. Code that runs at apply (core.gated) needs one approval.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.approvals import Approval, Coverage, Pair, voided
from core.config import ChangeLimits, DestroyRule, Rule
from core.gated import Gated, Gates


@dataclass(frozen=True)
class Need:
    """What one gated change still needs under the rules, after the approvals so far."""

    pair: Pair
    rules: tuple[int, ...]  # indices of the matching rules (empty: the default, one approval)
    never: bool  # a `never` rule matches: no approval can unlock it
    missing: int  # approvals still needed (the most any matching rule still needs)

    @property
    def satisfied(self) -> bool:
        return not self.never and self.missing == 0


def unkeyed(address: str) -> str:
    """The address without instance keys: `module.a["k"].aws_s3_bucket.b[0]` → `module.a.aws_s3_bucket.b`.
    Keys are numbers or quoted strings, which may hold `]`, `"` (escaped) or dots."""
    out: list[str] = []
    depth, quoted, escaped = 0, False, False
    for ch in address:
        if depth == 0:
            if ch == "[":
                depth = 1
            else:
                out.append(ch)
        elif quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "]":
            depth = 0
    return "".join(out)


def names(gated: Gated) -> tuple[str, ...]:
    """Every name a destroy or change has in its plan: its address, the one before a move, each also unkeyed."""
    known = [gated.address, *([gated.previous] if gated.previous else [])]
    return tuple(dict.fromkeys([*known, *(unkeyed(a) for a in known)]))


def resource_type(address: str) -> str | None:
    """The resource type of an address (`module.a.aws_s3_bucket.b["x"]` → aws_s3_bucket); None for data."""
    parts = unkeyed(address.split(" (deposed ", 1)[0]).split(".")
    while len(parts) >= 2 and parts[0] == "module":
        parts = parts[2:]
    if parts and parts[0] == "data":
        return None
    return parts[0] if len(parts) >= 2 else None


def data_type(address: str) -> str | None:
    """The data source type of an address (`module.a.data.aws_ami.b` → aws_ami); None for a resource."""
    parts = unkeyed(address).split(".")
    while len(parts) >= 2 and parts[0] == "module":
        parts = parts[2:]
    return parts[1] if len(parts) >= 3 and parts[0] == "data" else None


# The actions a gated change counts as for change rules. A replacement makes the object anew with its new
# configuration: it is also a create and an update, so a rule naming either gates it (else a force-new
# attribute or `replace_triggered_by` turns a gated update into a destroy any one approver can approve).
# A replacement that forgets the old object (core.plan.ResourceChange.rule_action) creates and updates.
COUNTS_AS: dict[str, frozenset[str]] = {
    "delete": frozenset({"delete"}),
    "replace": frozenset({"replace", "create", "update"}),
    "forget-replace": frozenset({"create", "update"}),
}
_ANY_DESTROY = frozenset({"delete", "replace", "create", "update"})
_ANY_CHANGE = frozenset({"create", "update", "read"})


def counts_as(gated: Gated) -> frozenset[str]:
    """The actions a destroy or change counts as; one whose action is not known (an unknown action, an
    older record) counts as every action of its kind: rules can only ask more of it."""
    known = COUNTS_AS.get(gated.action, frozenset({gated.action}))
    if gated.kind == "destroy":
        return known if gated.action in ("delete", "replace") else _ANY_DESTROY
    return known if gated.action in (*_ANY_CHANGE, "forget-replace") else _ANY_CHANGE


def _acts(rule: Rule, gated: Gated) -> bool:
    """Is the rule about this kind of gated change? A destroy rule is about every destroy; a change rule
    about the actions it names (COUNTS_AS); the limits about the limits alone."""
    kind = gated.kind
    if isinstance(rule, ChangeLimits) or kind == "limit":
        return isinstance(rule, ChangeLimits) and kind == "limit"
    if kind == "code":
        return False
    if isinstance(rule, DestroyRule):
        return kind == "destroy"
    return bool(counts_as(gated) & set(rule.actions))


def matches(rule: Rule, gated: Gated) -> bool:
    if not _acts(rule, gated):
        return False
    if isinstance(rule, ChangeLimits):
        return True
    for name in names(gated):
        for pattern in rule.match:
            if pattern.startswith("type:"):
                wanted = pattern[len("type:") :]
                if wanted in (resource_type(name), data_type(name) if gated.action == "read" else None):
                    return True
            elif fnmatch.fnmatchcase(name, pattern):
                return True
    return False


def matching(rules: Sequence[Rule], gated: Gated) -> tuple[int, ...]:
    return tuple(i for i, rule in enumerate(rules) if matches(rule, gated))


def needs(
    gates: Gates,
    approvals: Iterable[Approval],
    rules: Sequence[Rule],
    eligible: Mapping[str, frozenset[int]],
) -> list[Need]:
    """Per gated change, what is still missing. `approvals` must already be bound to `gates`
    (Approval.bound). `eligible`: login → the narrowed rules (by index) that person counts for; every
    approver counts for the default and for rules that are not narrowed. Approvers must already be
    people who may approve at all (the caller checks the policy)."""
    by_pair: dict[Pair, set[str]] = {}
    for approval in approvals:
        for pair in approval.pairs:
            by_pair.setdefault(pair, set()).add(approval.approver.casefold())
    logins = {login.casefold(): rules_ok for login, rules_ok in eligible.items()}
    out = []
    for project, key in sorted((p, k) for p, keys in gates.items() for k in keys):
        pair = (project, key)
        hits = matching(rules, gates[project][key])
        people = by_pair.get(pair, set())
        if not hits:
            out.append(Need(pair, (), False, 0 if people else 1))
            continue
        missing = 0
        for index in hits:
            rule = rules[index]
            counted = [p for p in people if not rule.narrowed or index in logins.get(p, frozenset())]
            missing = max(missing, max(0, rule.approvals - len(counted)))
        out.append(Need(pair, hits, any(rules[i].never for i in hits), missing))
    return out


def satisfied_pairs(needs_: Iterable[Need]) -> frozenset[Pair]:
    return frozenset(n.pair for n in needs_ if n.satisfied)


def label(rules: Sequence[Rule], index: int) -> str:
    """A rule as the file names it: `destroy_rules[0]`, `change_rules[1]`, `change_limits`."""
    rule = rules[index]
    return rule.label(sum(1 for r in rules[:index] if type(r) is type(rule)))


def explain(need: Need, rules: Sequence[Rule]) -> str:
    """For comments and summaries: which rule applies and what it still needs."""
    if need.never:
        index = next(i for i in need.rules if rules[i].never)
        return f"{label(rules, index)}: never — no approval can unlock it"
    if not need.rules:
        return "approved" if need.missing == 0 else "needs 1 approval"
    labels = ", ".join(label(rules, i) for i in need.rules)
    if need.missing == 0:
        return f"{labels}: approved"
    noun = "approval" if need.missing == 1 else "approvals"
    return f"{labels}: needs {need.missing} more {noun}"


def rule_coverage(
    gates: Gates,
    approvals: Iterable[Approval],
    *,
    sha: str,
    rules: Sequence[Rule],
    eligible: Mapping[str, frozenset[int]],
) -> Coverage:
    """How far approvals at `sha` reach into its gated changes, under the rules. Approvals for any other
    SHA count for nothing, and each counts only for the changes it saw with the same object."""
    given = [a for a in approvals if a.sha == sha]
    at_sha = [a.bound(gates) for a in given]
    found = needs(gates, at_sha, rules, eligible)
    approved = satisfied_pairs(found)
    approvers: dict[str, None] = {}
    by_pair: dict[Pair, dict[str, str]] = {}  # pair → casefolded login → the login as first written
    for approval in at_sha:
        if approval.pairs & approved:
            approvers.setdefault(approval.approver)
        for pair in approval.pairs:
            by_pair.setdefault(pair, {}).setdefault(approval.approver.casefold(), approval.approver)
    pairs = frozenset((p, k) for p, keys in gates.items() for k in keys)
    return Coverage(
        approved_pairs=approved,
        unapproved_pairs=pairs - approved,
        approvers=list(approvers),
        never=frozenset(n.pair for n in found if n.never),
        notes={n.pair: explain(n, rules) for n in found if n.rules},
        voided=voided(given, gates) - approved,
        approved_by={pair: tuple(people.values()) for pair, people in sorted(by_pair.items())},
    )
