"""Plan comments, markers, masking and status descriptions (workers/render*.py)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.plan import OutputChange, Plan, ResourceChange
from core.render.mask import PatternError
from core.render.plan import (
    MASK,
    destroy_status,
    marker,
    mask,
    parse_marker,
    pending_status,
    plan_status,
    render_config_error,
    render_fork_refused,
    render_plan_comments,
    render_too_many_files,
)
from core.results import ProjectResult

SHA = "0123456789abcdef0123456789abcdef01234567"
CLASS = {
    ("create",): "create",
    ("update",): "update",
    ("delete",): "delete",
    ("delete", "create"): "replace",
    ("create", "delete"): "replace",
    ("no-op",): "no-op",
    ("read",): "read",
}


def rc(address: str, *actions: str, **kw: object) -> ResourceChange:
    rtype = address.split("[")[0].split(".")[-2]
    return ResourceChange(
        address=address,
        mode=str(kw.pop("mode", "managed")),
        type=rtype,
        actions=actions,
        action_class=str(kw.pop("action_class", None) or CLASS[actions]),
        **kw,  # type: ignore[arg-type]
    )


def make_plan(*changes: ResourceChange, drift: tuple[ResourceChange, ...] = ()) -> Plan:
    return Plan("1.2", "1.11.4", changes, drift, (), False, True, True)


def project(plan: Plan | None, text: str = "", error: str | None = None, **kw: str) -> ProjectResult:
    return ProjectResult(
        name=kw.get("name", "dns"),
        dir=kw.get("dir", "infra/dns"),
        workspace=kw.get("workspace", "default"),
        tool=kw.get("tool", "terraform"),
        sha=SHA,
        plan=plan,
        plan_text=text,
        error=error,
    )


def render(*results: ProjectResult, **kw: object) -> list[str]:
    return render_plan_comments(list(results), pr=12, sha=SHA, **kw)  # type: ignore[arg-type]


def fences_balanced(body: str) -> bool:
    """Every opened backtick fence is closed by a fence at least as long (CommonMark rule)."""
    open_fence = ""
    for line in body.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if run < 3:
            continue
        if not open_fence:
            open_fence = "`" * run
        elif run >= len(open_fence) and not line.strip("`"):
            open_fence = ""
    return not open_fence


# --- headline and destroy list ---------------------------------------------------------------


def test_headline_uses_terraform_summary_phrasing() -> None:
    plan = make_plan(
        rc("a.create", "create"),
        rc("a.update", "update"),
        rc("a.replace", "delete", "create"),
        rc("a.gone", "delete"),
        rc("data.a.read", "read", mode="data"),
    )
    [body] = render(project(plan, tool="tofu", workspace="prod"))
    headline = next(line for line in body.splitlines() if line.startswith("- "))
    assert "Plan: 2 to add, 1 to change, 2 to destroy." in headline
    for part in ("`infra/dns`", "`prod`", f"`{SHA[:7]}`", "tofu", "**dns**"):
        assert part in headline
    assert parse_marker(body) == ("plan", {"pr": 12, "part": 1, "parts": 1, "sha": SHA})


def test_no_destroys_no_caution() -> None:
    [body] = render(project(make_plan(rc("a.b", "create"))))
    assert "[!CAUTION]" not in body
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in body


def test_every_destroy_listed_exactly_with_action_and_reason() -> None:
    plan = make_plan(
        rc('module.x.aws_s3_bucket.y["k"]', "delete", reason="delete_because_no_resource_config"),
        rc("aws_instance.web[3]", "delete", "create", reason="replace_by_triggers"),
        rc(
            "terraform_data.t",
            "create",
            "delete",
            reason="replace_because_cannot_update",
            replace_paths=("triggers_replace",),
        ),
        rc("aws_instance.old", "delete", deposed="0badf00d"),
        rc('aws_iam_role.r["a`b"]', "delete", reason="delete_because_each_key"),
        rc("aws_x.weird", "frobnicate", action_class="unknown"),
        rc("aws_x.kept", "update"),
    )
    [body] = render(project(plan))
    caution = body[body.index("> [!CAUTION]") :]
    assert "**6 resources will be destroyed** (1 project)" in caution
    for address in (
        'module.x.aws_s3_bucket.y["k"]',
        "aws_instance.web[3]",
        "terraform_data.t",
        "aws_instance.old",
        "aws_x.weird",
    ):
        assert f"> - `{address}`" in caution
    assert '> - `` aws_iam_role.r["a`b"] ``' in caution  # a backtick inside the address stays verbatim
    assert "`aws_x.kept`" not in caution
    assert "*delete — no longer in configuration* (1):" in caution
    assert "*replace (destroy, then create) — replace triggered by replace_triggered_by* (1):" in caution
    assert "*replace (create, then destroy) — an attribute cannot be updated in place: triggers_replace*" in caution
    assert "(deposed object `0badf00d`)" in caution
    assert "unknown action frobnicate (treated as a destroy)" in caution
    assert "Comment `/approve-destroy` to approve" in caution


def test_drift_shown_apart_and_not_counted() -> None:
    plan = make_plan(rc("a.b", "update"), drift=(rc("aws_s3_bucket.gone", "delete"),))
    [body] = render(project(plan))
    assert "#### Changed outside Terraform" in body
    assert "- `aws_s3_bucket.gone` — deleted outside Terraform" in body
    assert "[!CAUTION]" not in body
    assert "0 to destroy" in body


def test_failed_project_shows_last_error_lines() -> None:
    error = "\n".join(f"line {i}" for i in range(100))
    ok = project(make_plan(rc("a.b", "create")), name="net", dir="infra/net")
    [body] = render(project(None, error=error), ok)
    assert "2 projects planned, **1 failed**" in body
    assert "- ❌ **dns** · dir `infra/dns`" in body and "**plan failed**" in body
    assert "Last 40 of 100 lines:" in body
    assert "line 99" in body and "line 60" in body and "line 59\n" not in body


def test_plan_text_as_diff_like_atlantis() -> None:
    text = (
        "Terraform will perform the following actions:\n\n"
        "  # a.b will be created\n"
        '  + resource "a" "b" {\n'
        "      + id = (known after apply)\n"
        "    }\n"
        '  ~ resource "a" "c" {\n'
        '      - tag = "x" -> null\n'
        "    }\n"
        '-/+ resource "a" "d" {\n'
    )
    [body] = render(project(make_plan(rc("a.b", "create")), text))
    assert "<details><summary>Show plan</summary>\n\n```diff\n" in body
    assert '\n+   resource "a" "b" {\n' in body
    assert "\n+       id = (known after apply)\n" in body
    assert '\n!   resource "a" "c" {\n' in body
    assert '\n-       tag = "x" -> null\n' in body
    assert '\n-/+ resource "a" "d" {\n' in body
    assert "\n  # a.b will be created\n" in body


def test_backticks_in_plan_text_cannot_break_the_fence() -> None:
    text = '  + content = <<-EOT\n```\n````\nEOT\n  + resource "a" "b" {\n'
    [body] = render(project(make_plan(rc("a.b", "create")), text))
    assert "`````diff\n" in body
    assert fences_balanced(body)


# --- markers -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.sampled_from(["plan", "approval", "apply-result"]),
    st.dictionaries(st.text().filter(lambda key: key != "kind"), json_values),  # `kind` is marker()'s own
)
def test_marker_roundtrip(kind: str, fields: dict[str, object]) -> None:
    made = marker(kind, **fields)
    assert made.startswith("<!-- ") and made.endswith(" -->")
    assert made.count("-->") == 1  # no value can end the HTML comment early
    assert parse_marker(f"text before\n{made}\n<!-- plangate:plan {{}} -->") == (kind, fields)


@given(st.text())
def test_parse_marker_never_raises(garbage: str) -> None:
    result = parse_marker(garbage)
    assert result is None or isinstance(result[1], dict)


def test_parse_marker_garbage_and_first_valid() -> None:
    assert parse_marker(None) is None
    assert parse_marker("") is None
    assert parse_marker("<!-- plangate:plan {bad -->") is None
    assert parse_marker("<!-- plangate:plan [1, 2] -->") is None
    assert parse_marker('<!-- plangate:plan {bad --> <!-- plangate:approval {"a": 1} -->') == (
        "approval",
        {"a": 1},
    )
    assert parse_marker(marker("plan", part=1) + marker("approval", part=2)) == ("plan", {"part": 1})
    with pytest.raises(ValueError):
        marker("Bad Kind")


# --- masking -----------------------------------------------------------------------------------


def test_mask_rules() -> None:
    assert mask("token=hunter22!", ["hunter22"], []) == f"token={MASK}!"
    # short secrets: only as a whole quoted value, so `x[1]` and counts stay readable
    assert mask('x[1] = "1", y = 10', ["1"], []) == f"x[1] = {MASK}, y = 10"
    assert mask('pin = "abc" abc', ["abc"], []) == f"pin = {MASK} abc"
    # multi-line secrets line by line; JSON-escaped form too
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----"
    assert "MIIEvQIBADANBg" not in mask("        MIIEvQIBADANBg\n", [pem], [])
    assert mask('"a\\nbcdef"', ["a\nbcdef"], []) == f'"{MASK}"'
    # patterns: every match; a pattern matching the empty string inserts nothing
    assert mask("key AKIAABCDEFGHIJKLMNOP!", [], [r"AKIA[A-Z0-9]{16}"]) == f"key {MASK}!"
    assert mask("abc", [], [r"x*"]) == "abc"
    with pytest.raises(PatternError):
        mask("abc", [], ["("])
    with pytest.raises(PatternError, match="invalid escape"):  # RE2 has no backreferences
        mask("abc", [], [r"(a)\1"])


def test_a_catastrophic_pattern_cannot_hold_a_job() -> None:
    """`(a|aa)+$` backtracks exponentially in Python's re; RE2 masks a 200 KB line at once."""
    line = "a" * 200_000 + "!"
    started = time.monotonic()
    assert mask(line, [], [r"(a|aa)+$", r"(x+x+)+y"]) == line
    assert time.monotonic() - started < 1.0


def test_sensitive_values_masked_in_plan_error_and_addresses() -> None:
    secret = "s3cr3t-Value"
    plan = make_plan(rc(f'a.b["{secret}"]', "delete", sensitive_values=(secret,)))
    result = project(plan, f'  - password = "{secret}"\n', error=None)
    failed = project(None, error=f"Error: bad {secret} and AKIAABCDEFGHIJKLMNOP", dir="infra/b")
    bodies = render(result, failed, mask_patterns=[r"AKIA[A-Z0-9]{16}"])
    joined = "".join(bodies)
    assert secret not in joined and "AKIAABCDEFGHIJKLMNOP" not in joined
    assert joined.count(MASK) >= 4


secret_text = st.text(alphabet="0123456789ABCDEFGHJKLMNPQRSTUVWXYZ#%&*@^$", min_size=4, max_size=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    secret=secret_text,
    where=st.sets(st.sampled_from(["plan", "error", "address", "dir", "drift"]), min_size=1),
    lines=st.integers(min_value=1, max_value=3000),
    limit=st.integers(min_value=4096, max_value=70_000),
)
def test_secret_never_survives(secret: str, where: set[str], lines: int, limit: int) -> None:
    def results(value: str) -> list[ProjectResult]:
        address = f'a.b["{value}"]' if "address" in where else "a.b"
        drift = (rc(f"a.d{value}" if "drift" in where else "a.d", "update"),)
        plan = make_plan(rc(address, "delete", sensitive_values=(secret,)), drift=drift)
        text = "\n".join(f"  + line {i} = {value if i == lines // 2 and 'plan' in where else i}" for i in range(lines))
        return [
            project(plan, text, dir=f"infra/{value}" if "dir" in where else "infra"),
            project(None, error=f"Error: {value}" if "error" in where else "Error", dir="x"),
        ]

    baseline = "".join(render(*results("zzzz"), limit=limit))
    assume(secret not in baseline)  # the secret is not already template text
    bodies = render(*results(secret), limit=limit)
    assert all(secret not in body for body in bodies)
    assert all(len(body) <= limit for body in bodies)


# --- size limits -------------------------------------------------------------------------------


def big_plan(creates: int, destroys: int) -> tuple[Plan, str]:
    changes = [rc(f"terraform_data.new[{i}]", "create") for i in range(creates)]
    changes += [
        rc(f'module.old.terraform_data.gone["key-{i:05d}"]', "delete", reason="delete_because_no_resource_config")
        for i in range(destroys)
    ]
    text = ["Terraform will perform the following actions:", ""]
    for c in changes:
        verb = "created" if c.actions == ("create",) else "destroyed"
        sym = "+" if verb == "created" else "-"
        text += [
            f"  # {c.address} will be {verb}",
            f'  {sym} resource "terraform_data" "x" {{',
            f"      {sym} id     = (known after apply)",
            f'      {sym} input  = "value-{c.address}"',
            "    }",
            "",
        ]
    text.append(f"Plan: {creates} to add, 0 to change, {destroys} to destroy.")
    return make_plan(*changes), "\n".join(text)


CUT = re.compile(r"\*\*([\d,]+) more destroys not listed here\*\*")


def test_ten_thousand_resources_fit_and_destroys_are_accounted_for() -> None:
    plan, text = big_plan(8_000, 2_000)
    bodies = render(project(plan, text))
    assert all(len(body) <= 65_536 for body in bodies)
    assert all(fences_balanced(body) for body in bodies)
    first = bodies[0]
    assert "Plan: 8000 to add, 0 to change, 2000 to destroy." in first
    listed = re.findall(r'^> - `(module\.old\.terraform_data\.gone\["key-\d{5}"\])`$', first, re.M)
    expected = [c.address for c in plan.destroys]
    assert listed == expected[: len(listed)]  # exact addresses, in plan order
    cut = CUT.search(first)
    assert cut is not None  # 2,000 addresses do not fit next to everything else
    assert len(listed) + int(cut.group(1).replace(",", "")) == 2_000
    assert "`plangate gate PLAN.json`" in first
    omitted = re.search(r"… ([\d,]+) lines omitted", "".join(bodies))
    assert omitted is not None
    shown = sum(len(re.findall(r"^[+-] {6}id ", b, re.M)) for b in bodies)
    assert shown < 10_000


def test_destroy_list_kept_whole_when_it_fits() -> None:
    plan, text = big_plan(9_500, 500)
    bodies = render(project(plan, text))
    assert all(len(body) <= 65_536 for body in bodies)
    assert CUT.search(bodies[0]) is None
    for c in plan.destroys:
        assert f"> - `{c.address}`\n" in bodies[0]


def test_huge_single_plan_keeps_head_and_tail_with_exact_count() -> None:
    text = "\n".join(f"line {i:06d}" for i in range(50_000))
    bodies = render(project(make_plan(rc("a.b", "create")), text))
    joined = "".join(bodies)
    assert all(len(body) <= 65_536 for body in bodies)
    shown = re.findall(r"^line \d{6}$", joined, re.M)
    note = re.search(r"^… ([\d,]+) lines omitted \(comment size limit\) …$", joined, re.M)
    assert note is not None
    assert len(shown) + int(note.group(1).replace(",", "")) == 50_000
    assert "line 000000" in joined and "line 049999" in joined


def test_several_projects_overflow_into_follow_up_parts() -> None:
    results = [
        project(
            make_plan(rc("a.b", "create")),
            "\n".join(f"  + p{p} line {i}" for i in range(2_500)),
            name=f"p{p}",
            dir=f"infra/p{p}",
        )
        for p in range(4)
    ]
    bodies = render(*results)
    assert len(bodies) > 1
    for i, body in enumerate(bodies, start=1):
        assert len(body) <= 65_536 and fences_balanced(body)
        assert parse_marker(body) == ("plan", {"pr": 12, "part": i, "parts": len(bodies), "sha": SHA})
    assert "lines omitted" not in "".join(bodies)  # each plan fits a comment of its own: not shortened
    for p in range(4):
        assert sum(f"#### p{p} · `infra/p{p}`" in b for b in bodies) == 1
        assert f"p{p} line 2499" in "".join(bodies)
    assert all(f"dir `infra/p{p}`" in bodies[0] for p in range(4))  # all headlines in part 1
    assert f"continues in {len(bodies) - 1} more comment" in bodies[0]


@settings(max_examples=40, deadline=None)
@given(
    limit=st.integers(min_value=4096, max_value=40_000),
    sizes=st.lists(st.integers(min_value=0, max_value=4_000), min_size=1, max_size=4),
    destroys=st.integers(min_value=0, max_value=600),
    error_lines=st.integers(min_value=0, max_value=200),
)
def test_any_limit_is_respected(limit: int, sizes: list[int], destroys: int, error_lines: int) -> None:
    results = []
    for p, size in enumerate(sizes):
        plan, _ = big_plan(1, destroys if p == 0 else 0)
        text = "\n".join(f"  ~ attr_{i} = " + "x" * (i % 120) for i in range(size))
        results.append(project(plan, text, dir=f"d{p}", name=f"d{p}"))
    if error_lines:
        results.append(project(None, error="\n".join("E" * (i % 300) for i in range(error_lines)), dir="bad"))
    bodies = render(*results, limit=limit)
    assert all(len(body) <= limit for body in bodies)
    assert all(fences_balanced(body) for body in bodies)
    listed = len(re.findall(r"^> - `module\.old", bodies[0], re.M))
    cut = CUT.search(bodies[0])
    assert listed + (int(cut.group(1).replace(",", "")) if cut else 0) == destroys


def test_limit_too_small_refused() -> None:
    with pytest.raises(ValueError):
        render(project(make_plan()), limit=1000)


def test_too_many_files_note() -> None:
    note = render_too_many_files(3_412)
    assert "3,412 files" in note and "planned every project" in note
    [body] = render(project(make_plan()), note=note)
    assert "planned every project" in body


# --- statuses and small bodies -----------------------------------------------------------------


def test_statuses() -> None:
    destroying = project(make_plan(rc("a.b", "delete"), rc("a.c", "delete", "create")))
    clean = project(make_plan(rc("a.d", "create")), dir="other")
    broken = project(None, error="boom", dir="broken")
    assert plan_status([destroying, clean]) == (
        "success",
        "2 projects planned: 2 to add, 0 to change, 2 to destroy",
    )
    assert plan_status([destroying, broken]) == ("failure", "1 of 2 plans failed: dns")
    assert destroy_status([clean]) == ("success", "No destroys")
    assert destroy_status([destroying, clean]) == ("failure", "2 to destroy — comment /approve-destroy")
    assert destroy_status([destroying], "alice", 2) == ("success", "2 destroys approved by @alice")
    assert destroy_status([destroying], "alice", 1) == (
        "failure",
        "2 to destroy (1 approved) — comment /approve-destroy",
    )
    assert destroy_status([destroying, broken], "alice", 2)[0] == "failure"  # fail closed
    assert pending_status(3) == ("pending", "Planning 3 projects…")


@given(
    names=st.lists(st.text(min_size=1), min_size=1, max_size=30),
    fail=st.lists(st.booleans(), min_size=30, max_size=30),
    approver=st.none() | st.text(),
    approved=st.integers(min_value=0, max_value=10**9),
)
def test_descriptions_fit_140(names: list[str], fail: list[bool], approver: str | None, approved: int) -> None:
    plan = make_plan(*(rc(f"a.b[{i}]", "delete") for i in range(len(names))))
    results = [
        project(None if fail[i] else plan, error="x" if fail[i] else None, name=n, dir=n) for i, n in enumerate(names)
    ]
    for state, description in (plan_status(results), destroy_status(results, approver, approved)):
        assert state in ("success", "failure")
        assert 0 < len(description) <= 140 and "\n" not in description


def test_config_error_and_fork_bodies() -> None:
    body = render_config_error("projects[0].dir", "must be a relative path")
    assert "`projects[0].dir`" in body and "must be a relative path" in body
    assert parse_marker(body) == ("config-error", {"key": "projects[0].dir"})
    fork = render_fork_refused(7)
    assert parse_marker(fork) == ("fork-refused", {"pr": 7})
    assert "#7" in fork and "allow_fork_prs" in fork


def test_output_changes_do_not_count() -> None:
    plan = Plan(
        "1.2", "1.11.4", (rc("a.b", "update"),), (), (OutputChange("pw", ("delete",), True),), False, True, True
    )
    assert destroy_status([project(plan)]) == ("success", "No destroys")
