"""Reply bodies to slash commands and the approval status (workers/render_replies.py)."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st

from core.approval_markers import approvals_from_comments
from core.approvals import Approval, Coverage, approval_for, approval_marker, context
from core.commands import NearMiss, parse_command
from core.config import DestroyApprovers, RepoConfig, parse_config
from core.destroy_rules import rule_coverage
from core.gated import Gated
from core.render.items import destroy_item
from core.render.marker import open_sealed, parse_marker
from core.render.replies import (
    GITHUB_LIMIT,
    approval_status,
    render_approved,
    render_help,
    render_near_miss,
    render_not_allowed,
    render_plan_running,
    render_planning,
    render_refusal,
)
from core.render.status import MAX_DESCRIPTION

SHA = "abc1234" + "0" * 33
BOT = "plangate[bot]"
DNS = ['aws_route53_record.www["a"]', "aws_route53_record.mx"]


KEY = b"k" * 32


def gates(destroys: dict[str, list[str]]) -> dict[str, dict[str, Gated]]:
    """Objects as plan digests are: 32 hex digits, as good as random to zlib."""
    return {p: {k: Gated(k, hashlib.sha256(k.encode()).hexdigest()[:32]) for k in ks} for p, ks in destroys.items()}


def approve(destroys: dict[str, list[str]], who: str = "x", names: tuple[str, ...] = ()) -> Approval:
    result = approval_for(gates(destroys), SHA, who, names)
    assert isinstance(result, Approval), result
    return result


def seal(a: Approval, reply_to: int | None = None) -> str:
    return approval_marker(a, key=KEY, repo_id=1, number=2, reply_to=reply_to)


def coverage(destroys: dict[str, list[str]], approvals: list[Approval], sha: str) -> Coverage:
    return rule_coverage(gates(destroys), approvals, sha=sha, rules=(), eligible={})


def read_back(body: str) -> list[Approval]:
    comments = [{"id": 5, "user": {"login": BOT}, "body": body}]
    return approvals_from_comments(comments, bot_login=BOT, key=KEY, repo_id=1, number=2, sha=SHA)


def lines_after_marker(body: str) -> list[str]:
    first, _, rest = body.partition("\n")
    assert first.startswith("<!-- plangate:") and first.endswith(" -->")
    return rest.splitlines()


def test_approved_reply_lists_each_destroy() -> None:
    a = approve({"dns": DNS, "web": []})
    body = render_approved(a, coverage({"dns": DNS, "web": []}, [a], sha=SHA), marker=seal(a, 99))
    fields = open_sealed(body, "approval", KEY, context(1, 2)) or {}
    assert fields["reply_to"] == 99 and fields["approver"] == "x" and fields["sha"] == SHA
    assert fields["changes"] == {"dns": {k: hashlib.sha256(k.encode()).hexdigest()[:32] for k in DNS}}
    text = lines_after_marker(body)
    assert text[0] == "Approved by @x: 2 destroys in dns at abc1234:"
    assert '- `aws_route53_record.www["a"]`' in text and "- `aws_route53_record.mx`" in text
    assert "Every destroy at abc1234 is now approved." in body


def test_approved_reply_groups_by_project_and_says_what_is_left() -> None:
    destroys = {"dns": DNS, "web": ["aws_s3_bucket.logs"], "db": ["aws_db_instance.main"]}
    a = approve(destroys, names=("web", "dns"))
    body = render_approved(a, coverage(destroys, [a], sha=SHA), marker=seal(a))
    text = lines_after_marker(body)
    assert text[0] == "Approved by @x: 3 destroys in dns, web at abc1234:"
    assert "**dns** (2 destroys):" in text and "**web** (1 destroy):" in text
    assert text.index("**web** (1 destroy):") < text.index("- `aws_s3_bucket.logs`")
    assert "Still not approved at abc1234: 1 destroy in db" in body


def test_one_destroy_is_singular() -> None:
    a = approve({"dns": ["a.b"]})
    body = render_approved(a, marker=seal(a))
    assert "Approved by @x: 1 destroy in dns at abc1234:" in body
    assert "now approved" not in body  # no coverage given: no claim about the rest


def test_addresses_are_quoted_exactly() -> None:
    assert destroy_item('module.x.aws_s3_bucket.y["k"]') == '- `module.x.aws_s3_bucket.y["k"]`'
    assert destroy_item('a.b["two  spaces"]') == '- `a.b["two  spaces"]`'
    assert destroy_item('a.b["x`y"]') == '- ``a.b["x`y"]``'
    assert destroy_item('a.b["`"]') == '- ``a.b["`"]``'
    assert destroy_item("`x`") == "- `` `x` ``"
    assert destroy_item("aws_instance.web (deposed 00ab12)") == "- `aws_instance.web` (deposed object `00ab12`)"
    assert destroy_item('a.b["x (deposed y)"]') == '- `a.b["x (deposed y)"]`'


def test_thousands_of_destroys_are_summarized_but_all_recorded() -> None:
    destroys = {
        p: [f'module.zone["{p}"].aws_route53_record.r["host-{i}.example.com"]' for i in range(500)]
        for p in ("dns", "web")
    }
    a = approve(destroys)
    body = render_approved(a, coverage(destroys, [a], sha=SHA), marker=seal(a))
    assert len(body) <= GITHUB_LIMIT
    shown = sum(1 for line in body.splitlines() if line.startswith("- `"))
    assert 100 < shown < 1000
    assert f"- … and {1000 - shown:,} more (all 1,000 are recorded in this comment)" in body
    assert "Every destroy at abc1234 is now approved." in body
    (back,) = read_back(body)
    assert back.pairs == a.pairs


keys = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60).filter(str.strip)


@given(st.dictionaries(st.sampled_from(["dns", "web", "infra/net"]), st.lists(keys, min_size=1, max_size=30)))
def test_any_approval_renders_within_the_limit_and_reads_back(destroys: dict[str, list[str]]) -> None:
    a = approve(destroys) if destroys else None
    if a is None:
        return
    body = render_approved(a, marker=seal(a), limit=GITHUB_LIMIT)
    assert len(body) <= GITHUB_LIMIT
    (back,) = read_back(body)
    assert back.pairs == a.pairs and back.approver == "x"


def test_refusal_texts() -> None:
    refusal = approval_for(gates({"dns": []}), SHA, "x", ())
    assert not isinstance(refusal, Approval)
    body = render_refusal(refusal.reason, reply_to=3)
    assert parse_marker(body) == ("reply", {"command": "approve-destroy", "outcome": "refused", "reply_to": 3})
    assert lines_after_marker(body) == ["/approve-destroy: the latest plan at abc1234 has no destroys"]
    unknown = approval_for(gates({"dns": ["a.b"]}), SHA, "x", ("dsn",))
    assert not isinstance(unknown, Approval)
    assert "no project named `dsn`" in render_refusal(unknown.reason)


def test_not_allowed_and_plan_running() -> None:
    body = render_not_allowed("bob", "could not verify your permission, try again")
    assert lines_after_marker(body) == ["@bob /approve-destroy refused: could not verify your permission, try again"]
    assert parse_marker(body) == ("reply", {"command": "approve-destroy", "outcome": "not-allowed"})
    running = render_plan_running(SHA, reply_to=4)
    assert lines_after_marker(running) == [
        "/approve-destroy: a plan is still running for abc1234; wait for it, then approve"
    ]
    assert parse_marker(running) == (
        "reply",
        {"command": "approve-destroy", "outcome": "plan-running", "reply_to": 4, "sha": SHA},
    )


def test_near_miss_suggests_the_command() -> None:
    near = parse_command("/Approve-Destroy dns")
    assert isinstance(near, NearMiss)
    body = render_near_miss(near)
    assert lines_after_marker(body) == [
        "`/Approve-Destroy` is not a plangate command (commands are written exactly, in lower case): "
        "did you mean /approve-destroy?"
    ]
    weird = render_near_miss(NearMiss("/approve`destroy\n<!-- x -->", "approve-destroy", "unknown command"))
    assert weird.count("\n") == 1 + 1 and "did you mean /approve-destroy?" in weird


def test_a_hidden_or_look_alike_slash_is_answered_naming_the_character() -> None:
    hidden = parse_command("\u200b/approve-destroy")
    fullwidth = parse_command("\uff0fapprove-destroy")
    assert isinstance(hidden, NearMiss) and isinstance(fullwidth, NearMiss)
    assert lines_after_marker(render_near_miss(hidden)) == [
        "`\u200b/approve-destroy` is not a plangate command (an invisible character (U+200B ZERO WIDTH SPACE) "
        "comes before the slash): did you mean /approve-destroy?"
    ]
    assert "(U+FF0F FULLWIDTH SOLIDUS is not the slash `/`): did you mean /approve-destroy?" in render_near_miss(
        fullwidth
    )


def test_planning_reply() -> None:
    assert lines_after_marker(render_planning(SHA)) == ["/plan: planning every affected project at abc1234"]
    assert lines_after_marker(render_planning(SHA, ["dns", "web"])) == ["/plan: planning `dns`, `web` at abc1234"]


def test_help_explains_the_gate_for_this_repo() -> None:
    config = parse_config(
        "version: 1\n"
        "projects:\n  - {name: dns, dir: infra/dns}\n  - {name: web, dir: infra/web, workspace: prod}\n"
        "destroy_approvers: {permission: maintain, users: [oncall-lead], teams: [acme/sre]}\n"
    )
    body = render_help("acme/infra", config, reply_to=8)
    assert parse_marker(body) == ("reply", {"command": "help", "outcome": "help", "reply_to": 8})
    assert "### plangate on acme/infra" in body
    assert "people with maintain or admin permission on acme/infra" in body
    assert "`oncall-lead`" in body and "`acme/sre`" in body
    assert not re.search(r"@(oncall-lead|acme/sre)", body)  # never pings anyone
    assert "Never the pull request's own author. Never a bot." in body
    assert "- `dns`: `infra/dns`, workspace `default`" in body and "- `web`: `infra/web`, workspace `prod`" in body
    for command in ("`/approve-destroy`", "`/approve-destroy PROJECT ...`", "`/plan [PROJECT ...]`", "`/help`"):
        assert command in body


def test_help_for_autodiscovery_and_self_approval() -> None:
    config = RepoConfig(destroy_approvers=DestroyApprovers(allow_self_approval=True))
    body = render_help("acme/infra", config, planned=["infra/dns", "."], sha=SHA)
    assert "people with write, maintain or admin permission on acme/infra" in body
    assert "Discovered automatically" in body
    assert "Planned in this pull request at abc1234: `infra/dns`, `.`." in body
    assert "may approve their own destroys (`allow_self_approval: true`). Never a bot." in body


def test_approval_status() -> None:
    destroys = {"dns": DNS, "web": ["aws_s3_bucket.logs"]}
    ann = approve(destroys, who="ann", names=("dns",))
    bob = approve(destroys, who="bob", names=("web",))
    assert approval_status(coverage(destroys, [], sha=SHA)) == (
        "failure",
        "3 to destroy — comment /approve-destroy",
    )
    assert approval_status(coverage(destroys, [ann], sha=SHA)) == (
        "failure",
        "3 to destroy (2 approved) — comment /approve-destroy",
    )
    assert approval_status(coverage({"dns": DNS}, [ann], sha=SHA)) == ("success", "2 destroys approved by @ann")
    assert approval_status(coverage(destroys, [ann, bob], sha=SHA)) == (
        "success",
        "3 destroys approved by @ann and @bob",
    )
    assert approval_status(coverage({"dns": []}, [], sha=SHA)) == ("success", "No destroys")
    many = [approve(destroys, who=f"user{i:02d}-with-a-rather-long-login") for i in range(10)]
    state, text = approval_status(coverage(destroys, many, sha=SHA))
    assert state == "success" and len(text) <= MAX_DESCRIPTION


def test_many_projects_are_counted_in_the_headline() -> None:
    destroys = {f"p{i:02d}": [f"aws_s3_bucket.b{i}"] for i in range(12)}
    a = approve(destroys)
    body = render_approved(a, marker=seal(a))
    assert "Approved by @x: 12 destroys in p00, p01, p02, p03, p04, p05, p06, p07, p08, p09 and 2 more projects" in body
    assert "**p11** (1 destroy):" in body


def test_code_that_runs_at_apply_is_named_apart_from_destroys() -> None:
    destroys = {"dns": ["a.b", "run local-exec provisioner of terraform_data.x (at create)"]}
    a = approve(destroys)
    body = render_approved(a, marker=seal(a))
    assert "Approved by @x: 1 destroy and 1 change that runs code at apply in dns at abc1234:" in body
    state, text = approval_status(coverage(destroys, [], sha=SHA))
    assert (state, text) == ("failure", "1 to destroy, 1 runs code at apply — comment /approve-destroy")


def test_an_approval_for_another_object_is_named_in_what_is_left() -> None:
    a = approve({"dns": ["a.b"]})
    moved = {"dns": {"a.b": Gated("a.b", "another object")}}
    cov = rule_coverage(moved, [a], sha=SHA, rules=(), eligible={})
    body = render_approved(a, cov, marker=seal(a))
    assert "1 destroy approved before no longer covered: what they destroy (or the code they run) changed" in body
