"""The failed-apply issue, its banner on plan comments and `plangate/apply` while a project stays failed (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.apply_outcome import ApplyOutcome, Ending
from core.commands import Command, NearMiss, parse_command
from core.render.apply_status import apply_status, still_failed_status
from core.render.failed_apply import (
    BANNER_MARKER,
    DETAIL_CHARS,
    MAX_APPLIED,
    MAX_BODY,
    OUTPUT_LINES,
    Failure,
    applied_before,
    banner,
    banner_line,
    failed_issue_title,
    failed_title_prefix,
    failure_detail,
    render_apply_elsewhere,
    render_apply_started,
    render_failed_again,
    render_failed_issue,
    render_failed_resolved,
    with_banner,
)
from core.render.marker import parse_marker
from core.render.mask import MASK

SHA = "0123456789abcdef0123456789abcdef01234567"
OUTPUT = (
    "terraform_data.fresh: Creating...\n"
    "\x1b[0m\x1b[1mterraform_data.fresh: Creation complete after 0s [id=1]\x1b[0m\n"
    'module.a.terraform_data.b["k"]: Modifications complete after 1s [id=2]\n'
    "terraform_data.old: Destruction complete after 0s\n"
    "terraform_data.hook: Provisioning with 'local-exec'...\n"
    "Error: local-exec provisioner error\n"
)


def _failure(detail: str = OUTPUT, ending: Ending = Ending.FAILED) -> Failure:
    return Failure("app", "infra", SHA, "main", ending, detail)


def test_applied_before_lists_what_terraform_finished_in_order() -> None:
    assert applied_before(OUTPUT) == [
        ("terraform_data.fresh", "created"),
        ('module.a.terraform_data.b["k"]', "changed"),
        ("terraform_data.old", "destroyed"),
    ]
    assert applied_before("Error: nothing happened\nterraform_data.x: Creating...\n") == []


def test_failure_detail_masks_before_it_cuts_and_keeps_the_end() -> None:
    secret = "hunter2-very-secret"
    text = "x" * (DETAIL_CHARS * 2) + f"\npassword={secret} token=ghs_abc123\nError: boom\n"
    detail = failure_detail(text, [secret], [r"ghs_[a-z0-9]+"])
    assert len(detail) == DETAIL_CHARS and detail.endswith("Error: boom\n")
    assert secret not in detail and "ghs_abc123" not in detail and detail.count(MASK) == 2
    # a secret cut in half by the end-keeping would survive masking if it were cut first
    straddling = secret + "y" * (DETAIL_CHARS - len(secret) // 2)
    assert "secret" not in failure_detail(straddling, [secret], [])


def test_title_names_project_and_short_sha_under_a_fixed_prefix() -> None:
    title = failed_issue_title("app", SHA)
    assert title == "plangate: apply of app failed at 0123456"
    assert title.startswith(failed_title_prefix("app")) and not title.startswith(failed_title_prefix("ap"))


def test_issue_body_says_what_failed_what_was_applied_and_how_to_fix_it() -> None:
    body = render_failed_issue(_failure())
    kind, fields = parse_marker(body) or ("", {})
    assert kind == "apply-failed" and fields == {"project": "app", "sha": SHA, "ending": "failed"}
    assert "## ❌ Apply of `app` failed at 0123456" in body
    assert "Applied before it failed (3):" in body and "- `terraform_data.fresh` created" in body
    assert "Error: local-exec provisioner error" in body and "\x1b" not in body
    assert "comment `/apply` here" in body and "`/approve-destroy` here" in body


def test_issue_body_for_each_way_an_apply_ends_badly() -> None:
    died = render_failed_issue(_failure("", Ending.ERROR))
    assert "stopped during `terraform apply`" in died and "force-unlock" in died
    assert "terraform reported no resource applied" in died and "Output:" not in died
    lost = render_failed_issue(_failure("", Ending.LOST))
    assert "nothing was applied" in lost


def test_issue_body_is_masked_by_the_patterns_and_stays_small() -> None:
    body = render_failed_issue(_failure("token=abc-42\n"), [r"abc-\d+"])
    assert "abc-42" not in body and MASK in body
    huge = "".join(f"terraform_data.r{i}: Creation complete after 0s\n" for i in range(5_000)) + "z" * 100_000
    body = render_failed_issue(_failure(huge))
    assert len(body) < MAX_BODY
    assert f"… and {5_000 - MAX_APPLIED:,} more" in body and f"Last {OUTPUT_LINES} of" in body


def test_comments_again_and_resolved_carry_their_markers() -> None:
    assert (parse_marker(render_failed_again("app", SHA)) or ("",))[0] == "apply-failed-again"
    resolved = render_failed_resolved("app", SHA, "main")
    assert (parse_marker(resolved) or ("",))[0] == "apply-failed-resolved" and "Closing." in resolved


def test_apply_replies() -> None:
    started = render_apply_started("app", SHA, "main", reply_to=5)
    assert started.split("\n")[1].startswith("/apply: planning `app` at 0123456 (the head of `main`)")
    assert (parse_marker(started) or ("", {}))[1]["reply_to"] == 5
    assert "/apply: works only in the issue" in render_apply_elsewhere(reply_to=None)


PLAN = '<!-- plangate:plan {"sha": "x"} -->\n## Plan for 0123456\n\nbody\n'


def test_banner_goes_right_after_the_marker_line() -> None:
    block = banner([banner_line("app", "main", 3), banner_line("db", "prod", 9)])
    bannered = with_banner(PLAN, block)
    assert bannered.split("\n")[1:4] == [
        BANNER_MARKER,
        "⚠ main's last apply of `app` failed: #3",
        "⚠ prod's last apply of `db` failed: #9",
    ]
    assert bannered.endswith("\n\n## Plan for 0123456\n\nbody\n")
    assert banner([]) == ""


def test_banner_is_replaced_and_removed_never_stacked() -> None:
    one = with_banner(PLAN, banner([banner_line("app", "main", 3)]))
    two = with_banner(one, banner([banner_line("db", "main", 4)]))
    assert two.count(BANNER_MARKER) == 1 and "#3" not in two and "#4" in two
    assert with_banner(two, "") == PLAN


def test_banner_that_would_break_githubs_limit_is_left_out() -> None:
    full = PLAN + "x" * (MAX_BODY - len(PLAN) - 10)
    assert with_banner(full, banner([banner_line("app", "main", 3)])) == full


@given(st.text(max_size=300), st.lists(st.text(min_size=1, max_size=30), max_size=3))
def test_with_banner_is_idempotent_and_reversible(rest: str, names: list[str]) -> None:
    body = "<!-- plangate:plan {} -->\n" + rest.replace(BANNER_MARKER, "")
    block = banner([banner_line(name, "main", i + 1) for i, name in enumerate(names)])
    once = with_banner(body, block)
    assert with_banner(once, block) == once
    if not rest.startswith(BANNER_MARKER):
        assert with_banner(once, "") == body


def test_apply_status_stays_red_for_a_project_still_failed() -> None:
    applied = {"net": ApplyOutcome(Ending.APPLIED)}
    assert apply_status(applied)[0] == "success"
    state, said = apply_status(applied, [("app", 12)])
    assert state == "failure" and "last apply failed in app" in said and "#12" in said
    assert apply_status({}, [("app", 12)]) == still_failed_status([("app", 12)])
    # what this very SHA did comes first
    assert "apply failed in net" in apply_status({"net": ApplyOutcome(Ending.FAILED)}, [("app", 12)])[1]
    assert apply_status({"net": ApplyOutcome(Ending.ERROR)}, [("app", 12)])[0] == "error"


@given(st.lists(st.tuples(st.text(min_size=1, max_size=80), st.integers(1, 10**9)), min_size=1, max_size=30))
def test_still_failed_description_fits_githubs_limit(failed: list[tuple[str, int]]) -> None:
    state, said = still_failed_status(failed)
    assert state == "failure" and len(said) <= 140


def test_apply_command_parses_without_arguments() -> None:
    assert parse_command("/apply") == Command("apply", ())
    assert isinstance(parse_command("/apply app"), NearMiss)
    assert parse_command("/aply") == NearMiss("/aply", "apply", "unknown command")
    assert parse_command("/approve") is None  # another bot's word stays silent
