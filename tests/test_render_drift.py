"""Drift issue bodies and the has_drift decision (workers/render_drift.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.drift_diff import attribute_changes
from core.plan import KNOWN_ACTIONS, Plan, ResourceChange, parse_plan, summary_line
from core.render.accept_drift import render_accept_result, render_accepting
from core.render.drift import (
    ATTRIBUTES_SHOWN,
    GITHUB_LIMIT,
    drift_issue_title,
    has_drift,
    render_drift_failed,
    render_drift_report,
    render_drift_resolved,
)
from core.render.marker import parse_marker
from core.render.mask import MASK, MIN_LIMIT

SHA = "0123456789abcdef0123456789abcdef01234567"
AT = datetime(2024, 5, 6, 3, 0, 12, 345, tzinfo=UTC)
FIXTURES = Path(__file__).parent / "fixtures" / "terraform" / "plans"
MORE = re.compile(r"^- _… and ([\d,]+) more not listed here \(comment size limit\)_$", re.M)


def rc(address: str, *actions: str, mode: str = "managed", **kw: object) -> ResourceChange:
    acts = tuple(actions) or ("delete",)
    return ResourceChange(address, mode, "terraform_data", acts, KNOWN_ACTIONS.get(acts, "unknown"), **kw)  # type: ignore[arg-type]


def make_plan(changes: tuple[ResourceChange, ...] = (), drift: tuple[ResourceChange, ...] = ()) -> Plan:
    return Plan("1.2", "1.9.0", changes, drift, (), False, True, True)


def report(plan: Plan, plan_text: str = "", **kw: object) -> str:
    args: dict[str, object] = dict(project="dns", dir="infra/dns", sha=SHA, checked_at=AT, mask_patterns=())
    args.update(kw)
    return render_drift_report(plan=plan, plan_text=plan_text, **args)  # type: ignore[arg-type]


def fences_balanced(body: str) -> bool:
    fence = ""
    for line in body.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if run >= 3 and not fence:
            fence = "`" * run
        elif run >= len(fence) >= 3 and line.strip("`") == "":
            fence = ""
    return not fence


def test_title() -> None:
    assert drift_issue_title("dns") == "Drift in dns"
    assert drift_issue_title("infra/net-prod") == "Drift in infra/net-prod"


def test_report_says_what_drifted_what_a_plan_would_do_and_how_to_act() -> None:
    plan = make_plan(
        changes=(
            rc('aws_s3_bucket.b["k"]', "create"),
            rc("module.x.terraform_data.gone", reason="delete_because_no_resource_config"),
            rc("terraform_data.edit", "update"),
            rc("terraform_data.r", "delete", "create", reason="replace_because_cannot_update"),
            rc("data.x.y", "read", mode="data"),
            rc("terraform_data.same", "no-op"),
        ),
        drift=(
            rc("terraform_data.gone", "delete"),
            rc("terraform_data.edit", "update"),
            rc("terraform_data.only_moved", "no-op"),
        ),
    )
    text = '  # terraform_data.gone will be destroyed\n  - resource "terraform_data" "gone" {}\n'
    body = report(plan, text)
    assert parse_marker(body) == ("drift", {"project": "dns", "sha": SHA})
    assert body.splitlines()[1] == "## ⚠️ Drift in `dns` at 0123456 (2024-05-06T03:00:12Z)"
    assert f"directory `infra/dns` at commit `{SHA}`" in body
    assert f"**{summary_line(plan)}**" in body
    assert "**Plan: 2 to add, 1 to change, 2 to destroy.**" in body
    assert "### Changed outside Terraform (2)\n" in body
    assert "- `terraform_data.gone` — deleted outside Terraform" in body
    assert "- `terraform_data.edit` — updated outside Terraform" in body
    assert "only_moved" not in body
    assert "### What a plan would do now" in body
    assert "- `module.x.terraform_data.gone` — delete — no longer in configuration" in body
    assert "- `terraform_data.r` — replace (destroy, then create) — an attribute cannot be updated in place" in body
    assert "**Create or change (2):**" in body
    assert '- `aws_s3_bucket.b["k"]` — create' in body
    assert "- `terraform_data.edit` — update in place" in body
    assert "data.x.y" not in body and "terraform_data.same" not in body
    assert "plangate never applies on a schedule; merge a fix or apply by hand." in body
    assert "`/plan` in this issue" in body
    assert "<details><summary>Show plan</summary>" in body
    assert '-   resource "terraform_data" "gone" {}' in body  # terraform's symbol moved to column 0
    assert fences_balanced(body)


def test_destroys_come_first_in_plan_order() -> None:
    changes = (
        rc("a.create1", "create"),
        rc("z.destroy1"),
        rc("a.update1", "update"),
        rc("y.destroy2", "create", "delete"),
        rc("x.unknown", "delete", "frobnicate"),
    )
    body = report(make_plan(changes))
    order = [m.group(1) for m in re.finditer(r"^- `([^`]+)`", body, re.M)]
    assert order == ["z.destroy1", "y.destroy2", "x.unknown", "a.create1", "a.update1"]
    assert "**Destroy (3), listed first:**" in body
    assert "- `x.unknown` — unknown action delete, frobnicate (treated as a destroy)" in body
    assert body.index("### What a plan would do now") < body.index("**Destroy (3)")


def test_moves_imports_forgets_and_deposed_objects_are_named() -> None:
    changes = (
        rc("terraform_data.new", "no-op", previous_address="terraform_data.old"),
        rc("terraform_data.imp", "no-op", importing=True),
        rc("terraform_data.f", "forget"),
        rc("terraform_data.fc", "create", "forget"),
        rc("terraform_data.d", deposed="00abc"),
    )
    body = report(make_plan(changes))
    assert "- `terraform_data.new` — moved from `terraform_data.old`" in body
    assert "- `terraform_data.imp` — import" in body
    assert "- `terraform_data.f` — forget (removed from state, object kept)" in body
    assert "- `terraform_data.fc` — forget the old object" in body
    assert "- `terraform_data.d` (deposed object `00abc`) — delete deposed object" in body
    assert "**Create or change (4):**" in body
    assert body.index("terraform_data.d`") < body.index("terraform_data.new`")


def test_drift_only_says_a_plan_would_change_nothing() -> None:
    body = report(make_plan(drift=(rc("terraform_data.x", "update"),)))
    assert "### What a plan would do now\n\nNothing:" in body
    assert "**No changes.**" in body
    assert "Create or change" not in body and "Destroy (" not in body


def test_addresses_are_quoted_exactly_as_terraform_prints_them() -> None:
    addresses = ['module.a["x y"].aws_s3_bucket.b[0]', "module.m.terraform_data.`tick`", 'x.y["a`b"]']
    body = report(make_plan(tuple(rc(a, "create") for a in addresses)))
    assert '- `module.a["x y"].aws_s3_bucket.b[0]` — create' in body
    assert "- `` module.m.terraform_data.`tick` `` — create" in body
    assert '- `` x.y["a`b"] `` — create' in body


def test_real_fixture_plan_with_drift() -> None:
    plan = parse_plan((FIXTURES / "tf-summarize" / "example.tfplan.json").read_bytes())
    body = report(plan)
    assert has_drift(plan)
    assert '- `module.github["terraform-plan-summary"].github_branch.demo` — deleted outside Terraform' in body
    assert f"### Changed outside Terraform ({len(plan.drift)})" in body
    assert "- `github_repository.terraform_plan_summary` — create" in body


def test_checked_at_is_shown_in_utc() -> None:
    at = datetime(2024, 5, 6, 5, 30, tzinfo=timezone(timedelta(hours=2)))
    body = report(make_plan((rc("a.b", "create"),)), checked_at=at)
    assert "at 0123456 (2024-05-06T03:30:00Z)" in body
    naive = report(make_plan((rc("a.b", "create"),)), checked_at=datetime(2024, 5, 6, 3, 30))
    assert "(2024-05-06T03:30:00Z)" in naive


secret_text = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ0123456789$%#", min_size=4, max_size=30)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(secret=secret_text, pattern_secret=st.from_regex(r"tok_[a-z0-9]{8,20}", fullmatch=True))
def test_report_masks_sensitive_values_and_patterns(secret: str, pattern_secret: str) -> None:
    assume(secret not in MASK and secret not in SHA.upper())
    changes = (rc(f'terraform_data.x["{secret}"]', "create", sensitive_values=(secret,)),)
    text = f'  + resource "terraform_data" "x" {{\n      + input = "{secret}" # {pattern_secret}\n    }}\n'
    body = report(make_plan(changes), text, dir=f"infra/{pattern_secret}", mask_patterns=(r"tok_[a-z0-9]+",))
    rest = body.split("\n", 1)[1]
    assert secret not in rest and pattern_secret not in rest
    assert MASK in rest
    assert parse_marker(body) == ("drift", {"project": "dns", "sha": SHA})


@settings(max_examples=40)
@given(secret=secret_text)
def test_failure_output_is_masked(secret: str) -> None:
    assume(secret not in MASK)
    body = render_drift_failed(
        project="dns",
        sha=SHA,
        checked_at=AT,
        error=f"Error: bad credentials {secret}\npassword=hunter22xx",
        mask_patterns=(r"password=\S+",),
        secrets=(secret,),
    )
    assert secret not in body.split("\n", 1)[1] and "hunter22xx" not in body


def test_ten_thousand_changes_fit_with_exact_counts() -> None:
    n = 10_000
    destroys = tuple(rc(f'module.mod_{i}.terraform_data.to_destroy["{i:05d}"]') for i in range(n))
    creates = tuple(rc(f"module.m.terraform_data.new_{i}", "create") for i in range(n))
    drift = tuple(rc(f"module.m.terraform_data.drifted_{i}", "update") for i in range(n))
    plan = make_plan(destroys + creates, drift)
    text = "\n".join(f"  # terraform_data.x[{i}] will be destroyed" for i in range(50_000))
    body = report(plan, text)
    assert len(body) <= GITHUB_LIMIT
    assert f"### Changed outside Terraform ({n:,})" in body
    assert f"**Destroy ({n:,}), listed first:**" in body
    assert f"**Create or change ({n:,}):**" in body
    listed = {kind: len(re.findall(rf"^- `[^`]*{kind}[^`]*`", body, re.M)) for kind in ("drifted", "destroy", "new_")}
    cuts = [int(c.replace(",", "")) for c in MORE.findall(body)]
    assert len(cuts) == 3
    assert [listed["drifted"] + cuts[0], listed["destroy"] + cuts[1], listed["new_"] + cuts[2]] == [n, n, n]
    assert all(v > 50 for v in listed.values())  # every section keeps a fair share
    assert "lines omitted (comment size limit)" in body
    assert "plangate never applies on a schedule" in body
    assert fences_balanced(body)


def test_small_limit_is_respected_and_too_small_refused() -> None:
    plan = make_plan(tuple(rc(f"terraform_data.x{i}") for i in range(2_000)))
    body = report(plan, "x\n" * 5_000, limit=MIN_LIMIT)
    assert len(body) <= MIN_LIMIT
    [cut] = MORE.findall(body)
    assert len(re.findall(r"^- `terraform_data", body, re.M)) + int(cut.replace(",", "")) == 2_000
    with pytest.raises(ValueError):
        report(plan, limit=MIN_LIMIT - 1)


def test_failed_check_is_distinct_and_keeps_the_last_sixty_lines() -> None:
    error = "\x1b[31m" + "\n".join(f"line {i}" for i in range(1, 201)) + "\x1b[0m\n"
    body = render_drift_failed(project="dns", sha=SHA, checked_at=AT, error=error, mask_patterns=())
    assert parse_marker(body) == ("drift-check-failed", {"project": "dns", "sha": SHA})
    assert body.splitlines()[1] == "## ❓ Drift check failed in `dns` at 0123456 (2024-05-06T03:00:12Z)"
    assert "**the drift status is unknown**" in body
    assert "Last 60 of 200 lines of output:" in body
    assert "\nline 141\n" in body and "\nline 200\n" in body and "\nline 140\n" not in body
    assert "\x1b" not in body
    assert "`/plan` in this issue" in body
    assert fences_balanced(body)


def test_failed_check_with_huge_lines_fits() -> None:
    error = "\n".join("E" * 5_000 + str(i) for i in range(100))
    body = render_drift_failed(project="dns", sha=SHA, checked_at=AT, error=error, limit=MIN_LIMIT)
    assert len(body) <= MIN_LIMIT
    assert "drift status is unknown" in body and fences_balanced(body)


def test_resolved_comment() -> None:
    body = render_drift_resolved(project="dns", sha=SHA, checked_at=AT)
    assert parse_marker(body) == ("drift-resolved", {"project": "dns", "sha": SHA})
    assert body.splitlines()[1].startswith("No drift at 0123456 (2024-05-06T03:00:12Z): closing.")


@pytest.mark.parametrize(
    ("changes", "drift", "expected"),
    [
        ((), (), False),
        ((rc("a.b", "no-op"),), (), False),
        ((rc("data.a.b", "read", mode="data"),), (), False),  # data sources are read, not drifted
        ((rc("a.b", "no-op"),), (rc("a.b", "no-op"),), False),  # a refreshed move is not drift
        ((), (rc("a.b", "update"),), True),  # changed outside, even when the plan has nothing to do
        ((), (rc("a.b", "delete"),), True),
        ((rc("a.b", "create"),), (), True),
        ((rc("a.b", "update"),), (), True),
        ((rc("a.b", "delete"),), (), True),
        ((rc("a.b", "create", "delete"),), (), True),
        ((rc("a.b", "forget"),), (), True),  # state and code disagree
        ((rc("a.b", "create", "forget"),), (), True),
        ((rc("a.b", "no-op", previous_address="a.old"),), (), True),  # an unapplied moved block
        ((rc("a.b", "no-op", importing=True),), (), True),
        ((rc("a.b", "delete", "x"),), (), True),  # unknown fails closed
    ],
)
def test_has_drift(changes: tuple[ResourceChange, ...], drift: tuple[ResourceChange, ...], expected: bool) -> None:
    assert has_drift(make_plan(changes, drift)) is expected


def test_output_changes_alone_are_not_drift() -> None:
    plan = parse_plan(
        '{"format_version": "1.2", "resource_changes": [], '
        '"output_changes": {"o": {"actions": ["update"], "before": 1, "after": 2}}}'
    )
    assert plan.has_changes
    assert not has_drift(plan)


def test_fixture_plans_without_drift_or_changes() -> None:
    plan = parse_plan((FIXTURES / "opentofu" / "equivalence" / "moved_with_refresh_only.plan.json").read_bytes())
    assert not has_drift(plan)
    drifted = parse_plan((FIXTURES / "opentofu" / "equivalence" / "drift_refresh_only.plan.json").read_bytes())
    assert has_drift(drifted) and not drifted.changes


def _drift_entry(
    address: str, before: Mapping[str, object], after: Mapping[str, object], **marks: object
) -> dict[str, object]:
    change = {"actions": ["update"], "before": before, "after": after, **marks}
    return {"address": address, "mode": "managed", "type": "terraform_data", "change": change}


def test_each_drifted_resource_lists_its_changed_attributes_before_and_after() -> None:
    entry = _drift_entry(
        "terraform_data.x",
        {"id": "1", "input": "a", "tags": {"env": "prod"}, "token": "tok-old-secret"},
        {"id": "1", "input": "b", "tags": {"env": "staging"}, "token": "tok-new-secret"},
        before_sensitive={"token": True},
        after_sensitive={"token": True},
    )
    plan = parse_plan(json.dumps({"format_version": "1.2", "resource_drift": [entry]}))
    body = report(plan)
    assert '- `terraform_data.x` — updated outside Terraform\n  - `input`: `"a"` → `"b"`\n' in body
    assert '  - `tags.env`: `"prod"` → `"staging"`' in body
    assert f"  - `token`: `{MASK}` → `{MASK}`" in body
    assert "tok-old-secret" not in body and "tok-new-secret" not in body
    assert "/accept-drift" in body


def test_a_sensitive_value_is_masked_even_where_another_attribute_shows_it_plainly() -> None:
    entry = _drift_entry(
        "terraform_data.x",
        {"password": "pw-before-1234", "note": "x"},
        {"password": "pw-after-5678", "note": "pw-after-5678"},
        after_sensitive={"password": True},
    )
    body = report(parse_plan(json.dumps({"format_version": "1.2", "resource_drift": [entry]})), mask_patterns=())
    assert "pw-after-5678" not in body and "pw-before-1234" not in body
    assert f'  - `note`: `"x"` → `"{MASK}"`' in body


def test_a_resource_with_many_changed_attributes_lists_the_first_and_counts_the_rest() -> None:
    before = {f"a{i:03}": "x" for i in range(ATTRIBUTES_SHOWN + 7)}
    after = {key: "y" for key in before}
    plan = parse_plan(
        json.dumps({"format_version": "1.2", "resource_drift": [_drift_entry("terraform_data.x", before, after)]})
    )
    body = report(plan)
    assert body.count('`"x"` → `"y"`') == ATTRIBUTES_SHOWN
    assert "  - _… and 7 more attributes_" in body


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 400), width=st.integers(1, 3000))
def test_attribute_lists_keep_the_body_within_githubs_limit(n: int, width: int) -> None:
    entries = [
        _drift_entry(f"terraform_data.r{i}", {"input": "a" * width, "n": i}, {"input": "b" * width, "n": i + 1})
        for i in range(n)
    ]
    body = report(parse_plan(json.dumps({"format_version": "1.2", "resource_drift": entries})))
    assert len(body) <= GITHUB_LIMIT and fences_balanced(body)
    listed = body.count("updated outside Terraform")
    cut = MORE.search(body)
    assert listed + (int(cut.group(1).replace(",", "")) if cut else 0) == n


def _accepted_plan(n: int = 1, width: int = 1) -> Plan:
    entries = [
        _drift_entry(
            f"terraform_data.r{i}",
            {"input": "a" * width, "key": "k3y-before-secret"},
            {"input": "b" * width, "key": "k3y-after-secret"},
            before_sensitive={"key": True},
            after_sensitive={"key": True},
        )
        for i in range(n)
    ]
    return parse_plan(json.dumps({"format_version": "1.2", "resource_drift": entries}))


def test_the_accept_reply_lists_what_was_accepted_masked_and_answers_the_command() -> None:
    body = render_accept_result(project="app", sha=SHA, result="accepted", plan=_accepted_plan(), reply_to=77)
    assert parse_marker(body) == (
        "reply",
        {"command": "accept-drift", "outcome": "accepted", "reply_to": 77, "sha": SHA},
    )
    assert "Drift accepted in `app` at 0123456" in body and "No infrastructure was changed" in body
    assert "**Accepted: changed outside Terraform (1)**" in body
    assert '  - `input`: `"a"` → `"b"`' in body and f"  - `key`: `{MASK}` → `{MASK}`" in body
    assert "secret" not in body
    assert "closes when the next drift check" in body


@pytest.mark.parametrize(
    ("result", "says"),
    [
        ("nothing", "Nothing to accept in `app`"),
        ("refused", "Not accepted in `app` at 0123456: it would act. Nothing was applied."),
        ("failed", "Accepting drift in `app` at 0123456 failed: it would act."),
        ("lost", "was lost during `terraform apply`"),
    ],
)
def test_each_outcome_says_what_happened(result: str, says: str) -> None:
    body = render_accept_result(project="app", sha=SHA, result=result, plan=_accepted_plan(), reason="it would act")  # type: ignore[arg-type]
    assert says in body and "Drift accepted" not in body
    assert ("**Accepted:" in body) is False
    assert ("**Found: changed outside Terraform (1)**" in body) == (result in ("refused", "failed", "lost"))


def test_a_failed_accept_quotes_the_last_lines_of_output_masked() -> None:
    output = "\n".join(f"line {i}" for i in range(100)) + "\nError: k3y-after-secret leaked"
    body = render_accept_result(
        project="app", sha=SHA, result="failed", plan=_accepted_plan(), reason="apply failed", output=output
    )
    assert "Last 40 lines of output:" in body and "line 99" in body and "line 59\n" not in body
    assert f"Error: {MASK} leaked" in body


def test_the_accepting_reply_names_who_asked_and_what_runs() -> None:
    body = render_accepting(project="app", branch="main", login="bob", reply_to=5)
    assert parse_marker(body) == ("reply", {"command": "accept-drift", "outcome": "accepting", "reply_to": 5})
    assert "/accept-drift by @bob" in body and "`terraform plan -refresh-only` of `app`" in body


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 300), width=st.integers(1, 4000), limit=st.integers(MIN_LIMIT, GITHUB_LIMIT))
def test_accept_replies_fit_the_limit_and_count_what_they_leave_out(n: int, width: int, limit: int) -> None:
    body = render_accept_result(project="app", sha=SHA, result="accepted", plan=_accepted_plan(n, width), limit=limit)
    assert len(body) <= limit and fences_balanced(body)
    cut = MORE.search(body)
    assert body.count("updated outside Terraform") + (int(cut.group(1).replace(",", "")) if cut else 0) == n


def test_a_planned_update_lists_its_attributes_state_to_code_when_the_check_asks_for_them() -> None:
    entry = _drift_entry(
        "terraform_data.x", {"input": "edited", "pw": "pw-old-1234"}, {"input": "a", "pw": "pw-new-1234"}
    )
    entry["change"]["before_sensitive"] = entry["change"]["after_sensitive"] = {"pw": True}  # type: ignore[index]
    doc = json.dumps({"format_version": "1.2", "resource_changes": [entry]})
    body = report(parse_plan(doc, attributes=True))
    assert '- `terraform_data.x` — update in place\n  - `input`: `"edited"` → `"a"`\n' in body
    assert f"  - `pw`: `{MASK}` → `{MASK}`" in body and "pw-old" not in body and "pw-new" not in body
    assert "/accept-drift" not in body, "state and code disagreeing is not drift to accept"
    assert parse_plan(doc).changes[0].attributes == (), "a PR's plan keeps none"


def test_a_reply_that_knows_no_commit_says_where_and_marks_none() -> None:
    body = render_accept_result(project="app", sha="the head of main", result="lost")
    assert parse_marker(body) == ("reply", {"command": "accept-drift", "outcome": "lost"})
    assert "accepting drift in `app` at the head of main was lost" in body


@given(offset=st.integers(min_value=90, max_value=125))
def test_a_secret_a_long_value_carries_is_masked_before_the_value_is_cut(offset: int) -> None:
    secret = "S3cr3t" + "q" * 24  # another resource's sensitive value, carried here as plain text
    value = "x" * offset + secret + "y" * 200  # wherever the 120-character cut falls, near or across it
    attributes = attribute_changes({"before": {"policy": value}, "after": {"policy": "z"}})
    drift = (rc("terraform_data.x", "update", attributes=attributes),)
    elsewhere = (rc("terraform_data.pw", "update", sensitive_values=(secret,)),)
    body = report(make_plan(changes=elsewhere, drift=drift))
    assert "S3cr3tqq" not in body and "policy" in body
