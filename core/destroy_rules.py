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
several rules match needs every one of them. Address globs match the whole address (`*` crosses
dots and brackets; `?` one character; `[...]` a class), so `module.prod.*` covers everything in that
module. Rules come from the default branch only, like the rest of the policy: a PR that edits them
is judged by the rules it wants to change.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.approvals import Approval, Coverage, Destroys, Pair
from core.config import DestroyRule


@dataclass(frozen=True)
class Need:
    """What one destroy still needs under the rules, after the approvals so far."""

    pair: Pair
    rules: tuple[int, ...]  # indices of the matching rules (empty: the default, one approval)
    never: bool  # a `never` rule matches: no approval can unlock it
    missing: int  # approvals still needed (the most any matching rule still needs)

    @property
    def satisfied(self) -> bool:
        return not self.never and self.missing == 0


_INDEX = re.compile(r"\[[^\]]*\]")


def resource_type(key: str) -> str | None:
    """The resource type of a destroy key (`module.a.aws_s3_bucket.b["x"] (deposed ...)` → aws_s3_bucket)."""
    address = key.split(" (deposed ", 1)[0]
    parts = _INDEX.sub("", address).split(".")
    while len(parts) >= 2 and parts[0] == "module":
        parts = parts[2:]
    if parts and parts[0] == "data":
        return None
    return parts[0] if len(parts) >= 2 else None


def matches(rule: DestroyRule, key: str) -> bool:
    address = key.split(" (deposed ", 1)[0]
    for pattern in rule.match:
        if pattern.startswith("type:"):
            if resource_type(key) == pattern[len("type:") :]:
                return True
        elif fnmatch.fnmatchcase(address, pattern):
            return True
    return False


def matching(rules: Sequence[DestroyRule], key: str) -> tuple[int, ...]:
    return tuple(i for i, rule in enumerate(rules) if matches(rule, key))


def needs(
    pairs: Iterable[Pair],
    approvals: Iterable[Approval],
    rules: Sequence[DestroyRule],
    eligible: Mapping[str, frozenset[int]],
) -> list[Need]:
    """Per destroy, what is still missing. `eligible`: login → the narrowed rules (by index) that
    person counts for; every approver counts for the default and for rules that are not narrowed.
    Approvers must already be people who may approve at all (the caller checks the policy)."""
    by_pair: dict[Pair, set[str]] = {}
    for approval in approvals:
        for pair in approval.pairs:
            by_pair.setdefault(pair, set()).add(approval.approver.casefold())
    logins = {login.casefold(): rules_ok for login, rules_ok in eligible.items()}
    out = []
    for pair in sorted(set(pairs)):
        hits = matching(rules, pair[1])
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


def explain(need: Need, rules: Sequence[DestroyRule]) -> str:
    """For comments and summaries: which rule applies and what it still needs."""
    if need.never:
        index = next(i for i in need.rules if rules[i].never)
        return f"{rules[index].label(index)}: never — no approval can unlock it"
    if not need.rules:
        return "approved" if need.missing == 0 else "needs 1 approval"
    labels = ", ".join(rules[i].label(i) for i in need.rules)
    if need.missing == 0:
        return f"{labels}: approved"
    noun = "approval" if need.missing == 1 else "approvals"
    return f"{labels}: needs {need.missing} more {noun}"


def rule_coverage(
    destroys: Destroys,
    approvals: Iterable[Approval],
    *,
    sha: str,
    rules: Sequence[DestroyRule],
    eligible: Mapping[str, frozenset[int]],
) -> Coverage:
    """How far approvals at `sha` reach into its destroys, under the rules (approvals for any other
    SHA count for nothing). Without rules this is core.approvals.coverage."""
    at_sha = [a for a in approvals if a.sha == sha]
    pairs = [(project, key) for project, keys in destroys.items() for key in keys]
    found = needs(pairs, at_sha, rules, eligible)
    approved = satisfied_pairs(found)
    approvers: dict[str, None] = {}
    for approval in at_sha:
        if approval.pairs & approved:
            approvers.setdefault(approval.approver)
    notes = {n.pair: explain(n, rules) for n in found if n.rules}
    return Coverage(
        approved_pairs=approved,
        unapproved_pairs=frozenset(pairs) - approved,
        approvers=list(approvers),
        never=frozenset(n.pair for n in found if n.never),
        notes=notes,
    )
