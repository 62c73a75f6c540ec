"""Apply-on-merge bodies and plangate/apply statuses (workers/render_apply.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.apply_outcome import ApplyOutcome
from core.gate import Block, decide_apply, unreadable
from core.gated import Gated, plan_gates
from core.plan import Plan, ResourceChange
from core.render.apply import (
    render_apply_died,
    render_apply_result,
    render_blocked,
    render_blocked_issue_title,
    render_not_applied,
    render_superseded,
)
from core.render.apply_status import apply_pending, apply_status
from core.render.marker import parse_marker
from core.render.mask import MASK

SHA = "0123456789abcdef0123456789abcdef01234567"
HEAD = "fedcba9876543210fedcba9876543210fedcba98"
CUT = re.compile(r"\*\*([\d,]+) more destroys not listed here\*\*")
ITEM = re.compile(r"^- `([^`]+)`", re.M)


def _status(outcomes: dict[str, str]) -> tuple[str, str]:
    """apply_status of outcomes as they are stored."""
    return apply_status({project: ApplyOutcome.read(text) for project, text in outcomes.items()})


def rc(address: str, actions: tuple[str, ...] = ("delete",), **kw: object) -> ResourceChange:
    classes: dict[tuple[str, ...], str] = {("delete",): "delete", ("create",): "create"}
    action_class = classes.get(actions, "replace")
    return ResourceChange(address, "managed", "terraform_data", actions, action_class, **kw)  # type: ignore[arg-type]


def make_plan(*changes: ResourceChange, errored: bool = False) -> Plan:
    return Plan("1.2", "1.9.0", changes, (), (), errored, not errored, True)


def blocked(plan: Plan | None, approved: frozenset[str] = frozenset(), **kw: object) -> str:
    block = decide_apply(plan, approved) if plan is not None else unreadable("not JSON")
    assert isinstance(block, Block)
    args: dict[str, object] = dict(
        project="dns", dir="infra/dns", sha=SHA, block=block, plan=plan, plan_text="", pr=12, approved_on=None
    )
    args.update(kw)
    return render_blocked(mask_patterns=(), **args)  # type: ignore[arg-type]


def result(ok: bool, output: str, **kw: object) -> str:
    args: dict[str, object] = dict(project="dns", dir="infra/dns", sha=SHA, summary="", approved_by=[], secrets=())
    args.update(kw)
    return render_apply_result(ok=ok, output=output, mask_patterns=(), **args)  # type: ignore[arg-type]


def fences_balanced(body: str) -> bool:
    fence = ""
    for line in body.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if run >= 3 and not fence:
            fence = "`" * run
        elif run >= len(fence) >= 3 and line.strip("`") == "":
            fence = ""
    return not fence


def test_blocked_names_every_destroy_with_action_reason_and_instructions() -> None:
    plan = make_plan(
        rc("terraform_data.kept", reason="delete_because_no_resource_config"),
        rc('module.m.terraform_data.x["a b"]', ("delete", "create"), reason="replace_because_cannot_update"),
        rc("terraform_data.old", deposed="00abcdef"),
        rc("terraform_data.new", ("create",)),
    )
    text = '  # terraform_data.kept will be destroyed\n  - resource "terraform_data" "kept" {}\n'
    body = blocked(plan, frozenset({"terraform_data.kept"}), plan_text=text, approved_on=HEAD)
    assert body.splitlines()[1] == "## ⛔ Apply blocked at 0123456 (project `dns`)"
    assert f"commit `{SHA}` from #12." in body
    assert "> **2 to destroy — not approved.**" in body
    assert "> The approval given on fedcba9 did not cover these destroys." in body
    unapproved = body.index("Not approved (2):")
    approved = body.index("Already approved (1), destroyed too when this applies:")
    assert unapproved < approved
    assert (
        '- `module.m.terraform_data.x["a b"]` — replace (destroy, then create) — '
        "an attribute cannot be updated in place\n"
        "- `terraform_data.old` (deposed object `00abcdef`) — delete deposed object — "
        "left over from a failed create_before_destroy\n"
    ) in body
    assert body.index("- `terraform_data.kept` — delete — no longer in configuration") > approved
    assert "terraform_data.new`" not in body
    assert (
        "Comment `/approve-destroy` here to approve exactly these destroys at 0123456; plangate will plan "
        "again and apply only if the destroy set is unchanged."
    ) in body
    plan_part = '```diff\n  # terraform_data.kept will be destroyed\n-   resource "terraform_data"'
    assert f"<details><summary>Show plan</summary>\n\n{plan_part}" in body
    assert fences_balanced(body)


def test_blocked_without_approval_or_pr() -> None:
    body = blocked(make_plan(rc("terraform_data.a")), pr=None)
    assert "did not cover" not in body and "Already approved" not in body and "<details>" not in body
    assert f"commit `{SHA}`." in body
    assert ITEM.findall(body) == ["terraform_data.a"]


def test_untrusted_plan_says_no_approval_helps() -> None:
    plan = make_plan(rc("terraform_data.a"), errored=True)
    body = blocked(plan, frozenset({"terraform_data.a"}), approved_on=HEAD)
    assert "> **This plan cannot be trusted, so it was not applied. No approval will unblock it:**" in body
    assert "> - terraform reported errors while planning; the plan is incomplete and cannot be applied" in body
    assert "The plan would destroy 1 resource:\n- `terraform_data.a` — delete" in body
    assert "/approve-destroy" not in body and "did not cover" not in body
    assert "comment `/plan` here to plan 0123456 again." in body
    unread = blocked(None)
    assert "> - the plan could not be read: not JSON" in unread and "would destroy" not in unread


def many(n: int) -> list[ResourceChange]:
    return [rc(f'module.old.terraform_data.gone["key-{i:05d}"]', reason="delete_because_each_key") for i in range(n)]


@pytest.mark.parametrize("n_approved", [0, 4_000])
def test_ten_thousand_destroys_fit_with_exact_cut_count(n_approved: int) -> None:
    changes = many(10_000)
    text = "\n".join(f"  # {c.address} will be destroyed" for c in changes)
    approved = frozenset(c.address for c in changes[:n_approved])
    body = blocked(make_plan(*changes), approved, plan_text=text)
    assert len(body) <= 65_536 and fences_balanced(body)
    assert ("> **6,000 to destroy" if n_approved else "> **10,000 to destroy") + " — not approved.**" in body
    listed = ITEM.findall(body.split("<details>")[0])
    expected = [c.address for c in changes[n_approved:]] + [c.address for c in changes[:n_approved]]
    assert listed == expected[: len(listed)]  # unapproved first, exact addresses, plan order
    cut = CUT.search(body)
    assert cut is not None
    assert len(listed) + int(cut.group(1).replace(",", "")) == 10_000
    assert re.search(r"… [\d,]+ lines omitted \(comment size limit\) …", body)
    assert body.rstrip().endswith("</details>")


def test_destroy_list_kept_whole_when_it_fits() -> None:
    changes = many(400)
    body = blocked(make_plan(*changes), plan_text="x\n" * 100_000)
    assert CUT.search(body) is None and len(body) <= 65_536
    assert ITEM.findall(body) == [c.address for c in changes]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(min_value=4_096, max_value=70_000),
    n=st.integers(min_value=0, max_value=3_000),
    approved=st.integers(min_value=0, max_value=3_000),
    lines=st.integers(min_value=0, max_value=5_000),
)
def test_any_limit_is_respected(limit: int, n: int, approved: int, lines: int) -> None:
    changes = [*many(n), rc("terraform_data.c", ("create",))]
    keys = frozenset(c.address for c in changes[:approved])
    block = decide_apply(make_plan(*changes), keys)
    assume(isinstance(block, Block))
    text = "\n".join(f"  + line {i} " + "`" * (i % 5) for i in range(lines))
    body = blocked(make_plan(*changes), keys, plan_text=text, limit=limit)
    assert len(body) <= limit and fences_balanced(body)
    cut = CUT.search(body)
    assert len(ITEM.findall(body.split("<details>")[0])) + (int(cut.group(1).replace(",", "")) if cut else 0) == n
    output = "\n".join(f"Error line {i}" for i in range(lines))
    assert len(result(False, output, limit=limit)) <= limit


secret_text = st.text(alphabet="0123456789ABCDEFGHJKLMNPQRSTUVWXYZ#%&*@^$", min_size=4, max_size=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret=secret_text, lines=st.integers(min_value=1, max_value=4_000), ok=st.booleans())
def test_secret_never_survives(secret: str, lines: int, ok: bool) -> None:
    def bodies(value: str) -> list[str]:
        changes = [rc(f'a.b["{value}"]', sensitive_values=(secret,)), rc("a.c", reason=f"x_{value}")]
        text = "\n".join(f"  - v{i} = {value if i == lines // 2 else i}" for i in range(lines))
        output = "\n".join(f"out {i} {value if i == lines - 1 else ''}" for i in range(lines))
        return [
            blocked(make_plan(*changes), frozenset({"a.c"}), plan_text=text, dir=f"infra/{value}"),
            blocked(make_plan(*changes, errored=True), plan_text=text),
            result(
                ok,
                f"{output}\nApply complete! Resources: 0 added, 0 changed, 1 destroyed ({value}).",
                summary=value,
                dir=value,
                secrets=[secret],
            ),
        ]

    assume(all(secret not in body for body in bodies("zzzz")))  # the secret is not template text
    found = bodies(secret)
    assert all(secret not in body for body in found)
    assert all(MASK in body for body in found)


def test_mask_patterns_apply() -> None:
    key = "AKIAABCDEFGHIJKLMNOP"
    body = render_apply_result(
        project="dns",
        dir="d",
        sha=SHA,
        ok=False,
        output=f"Error: {key}",
        summary="",
        approved_by=[],
        mask_patterns=[r"AKIA[A-Z0-9]{16}"],
        secrets=(),
    )
    assert key not in body and body.count(MASK) == 2  # the error tail and the full output


def test_apply_result_success_takes_terraforms_line_and_credits_approvers() -> None:
    output = (
        "\x1b[1mterraform_data.a: Creating...\x1b[0m\nApply complete! Resources: 1 added, 0 changed, 1 destroyed.\n"
    )
    body = result(
        True, output, approved_by=["bob", "carol", "bob"], summary="Plan: 1 to add, 0 to change, 1 to destroy."
    )
    head = "## ✅ Applied 0123456 to `dns`: Apply complete! Resources: 1 added, 0 changed, 1 destroyed."
    assert body.splitlines()[1] == head
    assert "Destroys approved by @bob and @carol.\n" in body
    assert "<details><summary>Show apply output</summary>\n\n```\nterraform_data.a: Creating...\n" in body
    assert "\x1b" not in body
    fallback = result(True, "done", summary="Plan: 1 to add, 0 to change, 0 to destroy.")
    assert "## ✅ Applied 0123456 to `dns`: Plan: 1 to add, 0 to change, 0 to destroy.\n" in fallback
    assert "approved by" not in fallback and "## ✅ Applied 0123456 to `dns`.\n" in result(True, "")
    assert "Destroys approved by @bob.\n" in result(True, "", approved_by=["bob"])


def test_apply_result_failure_shows_last_60_lines_and_full_output() -> None:
    output = "\n".join(f"line {i:03d}" for i in range(100)) + "\nError: boom"
    body = result(False, output, summary="Plan: 0 to add, 1 to change, 0 to destroy.")
    assert body.splitlines()[1] == "## ❌ Apply failed at 0123456 in `dns`"
    assert "The plan was: Plan: 0 to add, 1 to change, 0 to destroy." in body
    tail = body.split("Last 60 of 101 lines:\n\n```\n")[1].split("\n```")[0].splitlines()
    assert tail == [f"line {i:03d}" for i in range(41, 100)] + ["Error: boom"]
    assert "line 000" in body.split("<details>")[1]
    assert "plangate does not retry an apply." in body and "comment `/plan` here" in body
    short = result(False, "Error: boom")
    assert "Output:\n\n```\nError: boom\n```" in short


def test_huge_output_keeps_head_and_tail_with_exact_count() -> None:
    output = "\n".join(f"line {i:06d}" for i in range(60_000))
    body = result(True, output)
    assert len(body) <= 65_536
    shown = re.findall(r"^line \d{6}$", body, re.M)
    note = re.search(r"^… ([\d,]+) lines omitted \(comment size limit\) …$", body, re.M)
    assert note is not None and len(shown) + int(note.group(1).replace(",", "")) == 60_000


def test_other_bodies() -> None:
    died = render_apply_died(project="dns", sha=SHA)
    assert "## ⚠️ Apply of 0123456 in `dns` died before it finished" in died
    assert "`plangate/apply` is `error`" in died and "`terraform force-unlock LOCK_ID`" in died
    assert "Comment `/plan` here to run plan → gate → apply again for 0123456." in died
    skipped = render_not_applied(project="dns", sha=SHA, summary="No changes.", reason="nothing to apply")
    assert skipped.splitlines()[1] == "Not applied at 0123456 (project `dns`): nothing to apply. No changes."
    gone = render_superseded(project="dns", old_sha=SHA, new_sha=HEAD)
    assert "~~Apply blocked at 0123456 (project `dns`)~~" in gone and "Superseded by fedcba9" in gone
    assert render_blocked_issue_title(SHA, "dns") == "plangate: apply blocked on 0123456 (dns)"


def test_markers_round_trip() -> None:
    ok = result(True, "", project='we"ird <!-- -->')
    assert parse_marker(ok) == ("apply-result", {"sha": SHA, "project": 'we"ird <!-- -->', "ok": True})
    assert parse_marker(blocked(make_plan(rc("a.b")))) == ("apply-blocked", {"sha": SHA, "project": "dns"})
    assert parse_marker(render_superseded(project="dns", old_sha=SHA, new_sha=HEAD)) == (
        "apply-superseded",
        {"project": "dns", "old_sha": SHA, "new_sha": HEAD},
    )
    assert parse_marker(render_apply_died(project="p", sha=SHA)) == ("apply-died", {"sha": SHA, "project": "p"})
    assert parse_marker(render_not_applied(project="p", sha=SHA, summary="", reason="r")) == (
        "not-applied",
        {"sha": SHA, "project": "p"},
    )


def test_apply_statuses() -> None:
    assert apply_pending(1) == ("pending", "Planning and applying 1 project…")
    assert apply_pending(3) == ("pending", "Planning and applying 3 projects…")
    assert _status({"a": "applied", "b": "applied", "c": "noop"}) == ("success", "applied 2 projects")
    assert _status({"a": "noop"}) == ("success", "nothing to apply")
    assert _status({}) == ("success", "nothing to apply")
    assert _status({"a": "applied", "b": "not-applied"}) == (
        "success",
        "applied 1 project; 1 not applied (apply_on_merge: false)",
    )
    assert _status({"a": "blocked:2", "b": "blocked:3", "c": "applied"}) == (
        "failure",
        "blocked: 5 gated changes — /approve-destroy",
    )
    assert _status({"a": "blocked:0", "b": "blocked:3"}) == (
        "failure",
        "blocked: plan cannot be trusted in a; 3 to destroy",
    )
    assert _status({"a": "failed", "b": "blocked:1"}) == ("failure", "apply failed in a")
    assert _status({"a": "failed", "b": "error", "c": "error"}) == (
        "error",
        "apply died in b, c — check the state",
    )
    died = _status({f"project-{i:02d}-with-a-long-name": "error" for i in range(30)})
    shown = re.fullmatch(r"apply died in (.*) \+(\d+) more — check the state", died[1])
    assert shown is not None and len(shown.group(1).split(", ")) + int(shown.group(2)) == 30
    failing = _status({f"p{i}" * 30: "failed" for i in range(9)})[1]
    assert failing.startswith("apply failed in p0p0") and failing.endswith(" more") and len(failing) <= 140
    for bad in ("blocked", "blocked:x", "ok", "Applied"):
        with pytest.raises(ValueError):
            _status({"a": bad})


outcome = st.one_of(
    st.sampled_from(["applied", "noop", "not-applied", "failed", "error"]),
    st.integers(min_value=0, max_value=10**7).map(lambda n: f"blocked:{n}"),
)


@settings(max_examples=200)
@given(outcomes=st.dictionaries(st.text(min_size=1, max_size=300), outcome, max_size=40), n=st.integers(0, 10**9))
def test_descriptions_fit_140(outcomes: dict[str, str], n: int) -> None:
    state, text = _status(outcomes)
    assert len(text) <= 140 and "\n" not in text
    if "error" in outcomes.values():
        assert state == "error" and text.endswith("— check the state")
    elif (
        any(v.startswith("blocked:") and v != "blocked:0" for v in outcomes.values())
        and "failed" not in outcomes.values()
    ):
        assert state == "failure" and ("gated change" in text or "to destroy" in text)
    assert len(apply_pending(n)[1]) <= 140


def test_blocked_names_the_changes_authors_and_code_that_runs_at_apply() -> None:
    plan = make_plan(rc("terraform_data.gone"))
    gates = {
        **plan_gates(plan),
        "run provisioners of terraform_data.hook": Gated(
            "run provisioners of terraform_data.hook",
            "o",
            what="local-exec provisioner of terraform_data.hook (at create)",
        ),
    }
    block = decide_apply(plan, frozenset({"terraform_data.gone"}), gates)
    assert isinstance(block, Block)
    authors = "@alice (opened this pull request), @mallory (pushed to this pull request's branch (abc1234))"
    body = render_blocked(
        project="dns",
        dir="infra/dns",
        sha=SHA,
        block=block,
        plan=plan,
        plan_text="",
        pr=12,
        approved_on=HEAD,
        gates=gates,
        authors=authors,
        voided=("terraform_data.gone",),
    )
    assert "> **1 that runs code at apply — not approved.**" in body
    assert "did not cover these changes." in body
    assert f"> Authors of this change, who may not approve it: {authors}." in body
    assert "Runs code at apply, not approved (1):\n- local-exec provisioner of terraform_data.hook (at create)" in body
    assert "> Approved before, but what they destroy (or run) changed since: `terraform_data.gone`." in body
