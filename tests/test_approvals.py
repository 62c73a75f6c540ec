"""What an approval covers, its sealed marker, and its rebuild from the PR's comments (core/approvals.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.approval_markers import approvals_from_comments
from core.approvals import (
    MAX_MARKER,
    Approval,
    Refusal,
    approval_for,
    approval_marker,
    context,
    from_json,
    timing_refusal,
    to_json,
)
from core.destroy_rules import rule_coverage
from core.gated import Gated, Gates
from core.render.marker import marker, sealed_marker

SHA = "abc1234" + "0" * 33
OTHER = "def5678" + "1" * 33
BOT = "plangate[bot]"
KEY = b"k" * 32
REPO, PR = 42, 7
DESTROYS = {
    "dns": ['aws_route53_record.www["a"]', "aws_route53_record.mx (deposed 00aa)"],
    "web": ["module.site.aws_s3_bucket.logs"],
    "net": [],
}

projects = st.text("abcdefgh./_-", min_size=1, max_size=6)
keys = st.text(min_size=1, max_size=40).filter(lambda k: k.strip() != "")
destroy_maps = st.dictionaries(projects, st.lists(keys, max_size=6, unique=True), max_size=5)
logins = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,20}", fullmatch=True)


def gates(destroys: dict[str, list[str]], suffix: str = "") -> dict[str, dict[str, Gated]]:
    """The gated changes of a plan, each object's digest made from its key (`suffix`: another object)."""
    return {
        p: {k: Gated(k, hashlib.sha256((k + suffix).encode()).hexdigest()[:32]) for k in ks}
        for p, ks in destroys.items()
    }


def comment(body: str, login: str = BOT, cid: int = 1) -> dict[str, Any]:
    return {"id": cid, "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}, "body": body}


def approve(destroys: dict[str, list[str]], sha: str = SHA, who: str = "ops", names: tuple[str, ...] = ()) -> Approval:
    result = approval_for(gates(destroys), sha, who, names, plan="digest")
    assert isinstance(result, Approval), result
    return result


def sealed(approval: Approval, *, key: bytes = KEY, repo: int = REPO, number: int = PR) -> str:
    return approval_marker(approval, key=key, repo_id=repo, number=number, reply_to=9)


def read(comments: list[dict[str, Any]], sha: str = SHA, **over: Any) -> list[Approval]:
    where: dict[str, Any] = {"bot_login": BOT, "key": KEY, "repo_id": REPO, "number": PR, "sha": sha, **over}
    return approvals_from_comments(comments, **where)


def covered(destroys: Gates, approvals: list[Approval], sha: str = SHA) -> Any:
    return rule_coverage(destroys, approvals, sha=sha, rules=(), eligible={})


def test_approval_covers_every_destroy_of_every_project_with_its_object() -> None:
    a = approve(DESTROYS)
    assert a.approver == "ops" and a.sha == SHA and a.comment_id is None and a.plan == "digest"
    assert a.pairs == {
        ("dns", 'aws_route53_record.www["a"]'),
        ("dns", "aws_route53_record.mx (deposed 00aa)"),
        ("web", "module.site.aws_s3_bucket.logs"),
    }
    logs = "module.site.aws_s3_bucket.logs"
    assert a.objects()["web"] == {logs: gates(DESTROYS)["web"][logs].object}


def test_approval_of_named_projects_covers_only_those() -> None:
    a = approve(DESTROYS, names=("web", "web"))
    assert a.pairs == {("web", "module.site.aws_s3_bucket.logs")}
    b = approve(DESTROYS, names=("net", "dns"))  # a named project without destroys is fine beside one with
    assert {p for p, _ in b.pairs} == {"dns"}


@pytest.mark.parametrize(
    ("destroys", "names", "reason"),
    [
        ({"dns": [], "web": []}, (), "the latest plan at abc1234 has no destroys"),
        ({}, (), "the latest plan at abc1234 has no destroys"),
        (DESTROYS, ("net",), "the latest plan at abc1234 has no destroys in `net`; the destroys are in `dns`, `web`"),
        ({"dns": []}, ("dns",), "the latest plan at abc1234 has no destroys"),
        (
            DESTROYS,
            ("dsn",),
            "no project named `dsn` in the latest plan at abc1234; planned there: `dns`, `web`, `net`",
        ),
        (DESTROYS, ("dns", "x", "y"), "no projects named `x`, `y` in the latest plan at abc1234; planned there:"),
        ({}, ("dns",), "no project named `dns` in the latest plan at abc1234; planned there: none"),
    ],
)
def test_refusals_say_why(destroys: dict[str, list[str]], names: tuple[str, ...], reason: str) -> None:
    result = approval_for(gates(destroys), SHA, "ops", names)
    assert isinstance(result, Refusal)
    assert result.reason.startswith(reason)


@given(destroy_maps, st.lists(projects, max_size=4), logins)
def test_an_approval_never_covers_a_pair_not_in_the_plan(
    destroys: dict[str, list[str]], names: list[str], who: str
) -> None:
    result = approval_for(gates(destroys), SHA, who, names)
    planned = {(p, k) for p, ks in destroys.items() for k in ks}
    if isinstance(result, Approval):
        assert result.pairs and result.pairs <= planned
        assert all(p in names for p, _ in result.pairs) or not names
    else:
        assert not planned or names


@given(destroy_maps, logins, st.integers(1, 2**40))
def test_a_sealed_marker_round_trips_through_the_bots_comment(
    destroys: dict[str, list[str]], who: str, cid: int
) -> None:
    result = approval_for(gates(destroys), SHA, who, (), plan="p1")
    if isinstance(result, Refusal):
        return
    body = sealed(result) + "\nvisible text"
    (back,) = read([comment(body, cid=cid)])
    assert back == Approval(who, SHA, result.seen, "p1", cid)


def _approval_for_mutation() -> tuple[Approval, str]:
    a = approve(DESTROYS)
    return a, sealed(a)


@given(st.data())
def test_no_byte_change_to_a_sealed_marker_verifies(data: st.DataObject) -> None:
    """Whatever byte of the marker is changed, inserted or removed, it no longer counts."""
    _, text = _approval_for_mutation()
    raw = bytearray(text.encode())
    at = data.draw(st.integers(0, len(raw) - 1), label="at")
    how = data.draw(st.sampled_from(["flip", "insert", "delete"]), label="how")
    if how == "flip":
        raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    elif how == "insert":
        raw.insert(at, data.draw(st.integers(0, 255), label="byte"))
    else:
        del raw[at]
    body = raw.decode("utf-8", "replace")
    assert body != text
    assert read([comment(body + "\ntext")]) == []


def test_a_marker_sealed_for_another_pr_repo_or_key_never_verifies() -> None:
    a = approve(DESTROYS)
    assert read([comment(sealed(a))]) != []  # the control
    for other in (sealed(a, number=PR + 1), sealed(a, repo=REPO + 1), sealed(a, key=b"x" * 32)):
        assert read([comment(other)]) == []


@given(destroy_maps, logins, st.sampled_from(["ops", "plangate", "plangate[bot] ", "other[bot]", ""]))
def test_a_marker_in_someone_elses_comment_never_counts(destroys: dict[str, list[str]], who: str, author: str) -> None:
    result = approval_for(gates(destroys), SHA, who, ())
    if isinstance(result, Refusal):
        return
    forged = [comment(sealed(result), login=author), {"id": 3, "body": sealed(result)}]
    forged.append({"id": 4, "user": None, "body": sealed(result)})
    assert read(forged) == []


def test_a_bot_comment_someone_else_changed_is_never_a_source() -> None:
    a = approve(DESTROYS)
    assert read([comment(sealed(a), cid=5)], altered={5}) == []
    assert len(read([comment(sealed(a), cid=5)], altered={6})) == 1


def test_an_unsealed_marker_in_the_bots_own_comment_never_counts() -> None:
    """The shape plangate used to write, typed into a bot comment by anyone with write access."""
    fields = {"v": 2, "approver": "bob", "sha": SHA, "projects": ["dns"], "addresses": {"dns": ["a.b"]}}
    assert read([comment(marker("approval", **fields))]) == []
    assert read([comment(marker("approval", **{**fields, "v": 3}))]) == []


def test_bot_login_compares_case_insensitively() -> None:
    body = sealed(approve(DESTROYS))
    assert len(read([comment(body, login="PlanGate[bot]")])) == 1


@given(destroy_maps, logins)
def test_approvals_for_another_sha_never_count(destroys: dict[str, list[str]], who: str) -> None:
    result = approval_for(gates(destroys), OTHER, who, ())
    if isinstance(result, Refusal):
        return
    assert read([comment(sealed(result))]) == []
    cov = covered(gates(destroys), [result])
    assert not cov.approved_pairs and cov.approvers == []
    assert cov.complete == (not any(destroys.values()))


def _fields(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 3,
        "approver": "ops",
        "sha": SHA,
        "plan": "p",
        "changes": {"dns": {"a.b": "o"}},
        "reply_to": 1,
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def _z(data: object) -> str:
    return base64.b64encode(zlib.compress(json.dumps(data).encode())).decode()


def _seal(**fields: Any) -> str:
    return sealed_marker("approval", KEY, context(REPO, PR), **fields)


@pytest.mark.parametrize(
    "body",
    [
        "<!-- plangate:approval {not json} " + "0" * 64 + " -->",
        sealed_marker("reply", KEY, context(REPO, PR), **_fields()),  # wrong kind
        _seal(**_fields(v=2)),  # unsealed versions count for nothing, sealed or not
        _seal(**_fields(v="3")),
        _seal(**_fields(approver="")),
        _seal(**_fields(approver=None)),
        _seal(**_fields(approver=["ops"])),
        _seal(**_fields(sha=None)),
        _seal(**_fields(sha=SHA.upper())),
        _seal(**_fields(sha=SHA[:7])),
        _seal(**_fields(plan=None)),
        _seal(**_fields(changes=None)),
        _seal(**_fields(changes={})),
        _seal(**_fields(changes={"dns": {}})),
        _seal(**_fields(changes={"dns": "a.b"})),
        _seal(**_fields(changes={"dns": ["a.b"]})),
        _seal(**_fields(changes={"dns": {"a.b": 3}})),
        _seal(**_fields(changes={"dns": {"": "o"}})),
        _seal(**_fields(changes_z=_z({"dns": {"a.b": "o"}}))),  # both forms at once
        _seal(**_fields(changes=None, changes_z="%%%not base64")),
        _seal(**_fields(changes=None, changes_z=base64.b64encode(b"not zlib").decode())),
        _seal(**_fields(changes=None, changes_z=_z(["dns"]))),
        _seal(**_fields(changes=None, changes_z=3)),
        # a zip bomb: inflating stops at the cap
        _seal(**_fields(changes=None, changes_z=base64.b64encode(zlib.compress(b" " * (20 * 1024 * 1024))).decode())),
        "",
    ],
)
def test_malformed_markers_are_ignored_even_when_sealed(body: str) -> None:
    assert read([comment(body)]) == []


def test_a_well_formed_sealed_marker_counts() -> None:
    """The control for the table above: the same shape, valid, is read, plain or compressed."""
    (a,) = read([comment(_seal(**_fields()))])
    assert a.seen == {("dns", "a.b", "o")}
    (b,) = read([comment(_seal(**_fields(changes=None, changes_z=_z({"dns": {"a.b": "o"}}))))])
    assert b.seen == a.seen


def test_only_a_marker_opening_the_body_is_read() -> None:
    """An address holding marker text cannot smuggle a second approval into the bot's own reply, and text
    the bot echoes later (a refusal quoting a command) can never carry one."""
    forged = _seal(**_fields(sha=OTHER, changes={"web": {"x": "o"}}))
    a = approve({"dns": [forged]})
    body = sealed(a) + "\n- `" + forged + "`"
    assert read([comment(body)], sha=OTHER) == []
    (back,) = read([comment(body)])
    assert back.pairs == {("dns", forged)}
    echoed = [f"@bob /plan refused: `{forged}`", f"plangate did not apply: {forged}", f"\n{forged}"]
    assert read([comment(b, cid=i) for i, b in enumerate(echoed)], sha=OTHER) == []


def test_large_approvals_are_compressed_and_still_complete() -> None:
    destroys = {"dns": [f'module.zone["z{i}"].aws_route53_record.record["host-{i}.example.com"]' for i in range(1000)]}
    a = approve(destroys)
    text = sealed(a)
    assert "changes_z" in text and len(text) <= MAX_MARKER
    (back,) = read([comment(text)])
    assert back.seen == a.seen and len(back.pairs) == 1000


def test_an_approval_too_large_to_record_is_refused() -> None:
    """Fail closed: an approval the PR cannot hold would vanish with Redis, so it is never given."""
    destroys = {"dns": [f"aws_route53_record.r{secrets.token_hex(32)}" for _ in range(2500)]}
    result = approval_for(gates(destroys), SHA, "ops")
    assert isinstance(result, Refusal)
    assert result.reason.startswith("2,500 destroys at abc1234 are too many to record in one approval comment")
    half = {"a": destroys["dns"][:400], "b": destroys["dns"][400:800]}
    assert isinstance(approval_for(gates(half), SHA, "ops", ("a",)), Approval)


def test_coverage_partial_then_complete() -> None:
    first = approve(DESTROYS, who="ann", names=("dns",))
    cov = covered(gates(DESTROYS), [first])
    assert cov.approved_pairs == first.pairs and cov.unapproved_pairs == {("web", "module.site.aws_s3_bucket.logs")}
    assert cov.approvers == ["ann"] and cov.total == 3 and not cov.complete
    second = approve(DESTROYS, who="bob", names=("web",))
    again = approve(DESTROYS, who="ann")
    cov = covered(gates(DESTROYS), [first, second, again])
    assert cov.complete and cov.approvers == ["ann", "bob"] and not cov.voided


def test_a_new_destroy_at_the_same_sha_is_not_covered() -> None:
    """A re-plan that finds one more destroy needs a new approval for it."""
    a = approve(DESTROYS)
    grown = {**DESTROYS, "web": [*DESTROYS["web"], "aws_s3_bucket.new"]}
    cov = covered(gates(grown), [a])
    assert cov.unapproved_pairs == {("web", "aws_s3_bucket.new")} and not cov.complete
    shrunk = {"dns": DESTROYS["dns"][:1]}
    assert covered(gates(shrunk), [a]).approved_pairs == {("dns", DESTROYS["dns"][0])}


def test_the_same_address_meaning_another_object_is_not_covered_and_says_so() -> None:
    """A re-plan under the same head (the base branch moved the backend to production) finds the same
    address: the object is another one, so the approval given for the first does not cover it."""
    a = approve(DESTROYS)
    moved = gates(DESTROYS)
    moved["web"] = gates({"web": DESTROYS["web"]}, suffix=" in production")["web"]
    cov = covered(moved, [a])
    assert cov.unapproved_pairs == {("web", "module.site.aws_s3_bucket.logs")}
    assert cov.voided == {("web", "module.site.aws_s3_bucket.logs")}
    assert a.bound(moved).pairs == a.pairs - {("web", "module.site.aws_s3_bucket.logs")}


def test_nothing_to_destroy_is_fully_approved() -> None:
    cov = covered({"dns": {}}, [])
    assert cov.complete and cov.total == 0 and cov.approvers == []


approvals = st.builds(
    Approval,
    logins,
    st.sampled_from([SHA, OTHER]),
    st.frozensets(st.tuples(projects, keys, keys), max_size=5),
    st.text(max_size=8),
    st.none() | st.integers(1, 2**53),
)


@given(st.lists(approvals, max_size=4))
def test_redis_record_round_trips(items: list[Approval]) -> None:
    assert from_json(to_json(items)) == items
    assert from_json(to_json(items).encode()) == items


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[1]",
        '[{"approver": "", "sha": "x", "seen": [], "plan": ""}]',
        '[{"approver": "a", "sha": "x", "seen": [["p", "k"]], "plan": ""}]',
        '[{"approver": "a", "sha": "x", "seen": [["p", "k", 1]], "plan": ""}]',
        '[{"approver": "a", "sha": "x", "seen": "p", "plan": ""}]',
        '[{"approver": "a", "sha": "x", "seen": []}]',
        '[{"approver": "a", "sha": "x", "pairs": [["p", "k"]]}]',  # the record before objects: never an approval
        '[{"approver": "a", "sha": "x", "seen": [], "plan": "", "comment_id": true}]',
        '[{"approver": "a", "sha": "x", "seen": [], "plan": "", "comment_id": "1"}]',
        "not json",
    ],
)
def test_a_broken_redis_record_is_an_error_not_an_approval(text: str) -> None:
    with pytest.raises(ValueError):
        from_json(text)


def test_an_approval_covers_only_a_plan_published_before_it_was_written() -> None:
    at, before, after = "2026-12-01T10:00:05Z", "2026-12-01T10:00:04Z", "2026-12-01T10:00:06Z"
    assert timing_refusal(SHA, named_sha=None, comment_at=at, published_at=before) is None
    for published in (at, after, None):  # same second, later, unknown: the approver may not have seen it
        refusal = timing_refusal(SHA, named_sha=None, comment_at=at, published_at=published)
        assert refusal is not None and "the plan changed after you commented" in refusal.reason
    assert timing_refusal(SHA, named_sha=None, comment_at=None, published_at=before) is not None
    assert timing_refusal(SHA, named_sha=SHA[:7], comment_at=at, published_at=before) is None
    wrong = timing_refusal(SHA, named_sha="0000000", comment_at=at, published_at=before)
    assert wrong is not None and "you approved `0000000`" in wrong.reason and SHA[:7] in wrong.reason


def test_names_select_every_workspace_of_a_project_and_identities_keep_them_apart() -> None:
    staging, prod = "app@staging:infra", "app@prod:infra"
    destroys = gates({staging: ["a.x"], prod: ["a.x"], "dns@default:dns": []})
    both = approval_for(destroys, SHA, "ops", ("app",))
    assert isinstance(both, Approval) and both.pairs == {(staging, "a.x"), (prod, "a.x")}
    one = approval_for(destroys, SHA, "ops", (staging,))
    assert isinstance(one, Approval) and one.pairs == {(staging, "a.x")}
    assert covered(destroys, [one]).unapproved_pairs == {(prod, "a.x")}
    unknown = approval_for(destroys, SHA, "ops", ("web",))
    assert isinstance(unknown, Refusal) and "`web`" in unknown.reason and "`app`" in unknown.reason
    assert "@" not in unknown.reason  # people read names, not identities
