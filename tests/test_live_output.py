"""workers.adapters.live_output: terraform's output kept line by line as it comes, masked, batched, capped;
and the runner's hook that feeds it while the process still runs."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from core import redis_keys
from core.render.backstop import Backstop
from core.render.mask import Masker
from core.runs import RunHead, run_id
from plumbing.records import Records
from plumbing.run_store import RunStore
from tests.keys import ec_pem, rsa_pem
from workers.adapters.live_output import CUT, LINE_CAP, LINE_COST, LiveOutput, step_line
from workers.adapters.terraform.runner import run

KEY = rsa_pem()
TOKEN = "ghs_" + "A1b2C3d4" * 5
HEAD = RunHead(run_id("job", "app"), "plan", "acme/infra", 7, "a" * 40, "app", "infra", "default")


class Recorder:
    """A RunStore stand-in that keeps each append (one round trip) as it was asked."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.fail = fail
        self.calls = 0

    def append(self, head: RunHead, texts: Sequence[str]) -> None:
        self.calls += 1
        if self.fail:
            raise redis.ConnectionError("Redis went away")
        self.batches.append(list(texts))

    @property
    def lines(self) -> list[str]:
        return [line for batch in self.batches for line in batch]


def _mask(patterns: Sequence[str] = (r"hunter\d+",)) -> Masker:
    backstop = Backstop([KEY, TOKEN])
    masker = Masker((), patterns)
    return lambda text: backstop(masker(text))  # type: ignore[return-value]


def _sink(store: Recorder, **options: float) -> LiveOutput:
    return LiveOutput(store, HEAD, _mask, **options)  # type: ignore[arg-type]


def test_lines_are_cut_per_stream_and_a_partial_line_waits_for_its_newline() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", b"Initial")
    sink("stderr", b"warn")
    sink("stdout", b"izing...\r\nPlan: 1 to add\nhalf")
    sink("stderr", b"ing\n")
    sink.close()
    assert store.lines == ["Initializing...", "Plan: 1 to add", "warning", "half"]


def test_a_lone_carriage_return_ends_a_line_and_an_empty_line_is_kept() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", b"10%\r20%\r\n\nend\n")
    sink.close()
    assert store.lines == ["10%", "20%", "", "end"]


def test_each_step_is_headed_and_flushes_what_the_last_one_left() -> None:
    store = Recorder()
    sink = _sink(store)
    sink.step(step_line("/usr/bin/terraform", ["init", "-input=false"]))
    sink("stdout", b"no newline at the end")
    sink.step(step_line("terraform", ["plan", "-out=/var/lib/plangate/checkouts/7/plan/plangate.tfplan"]))
    sink("stdout", b"Plan: 0 to add\n")
    sink.close()
    assert store.lines == [
        "$ terraform init -input=false",
        "no newline at the end",
        "$ terraform plan -out=plangate.tfplan",
        "Plan: 0 to add",
    ]


@given(st.integers(min_value=1, max_value=60), st.sampled_from(["hunter42", TOKEN, KEY.splitlines()[3]]))
@settings(max_examples=60, deadline=None)
def test_a_secret_cut_by_a_chunk_boundary_is_never_kept_unmasked(cut: int, secret: str) -> None:
    """Masking whole lines only: wherever the chunks split the text, the secret never reaches the store."""
    text = f"  + value = {secret} (from local-exec)\nnext\n".encode()
    store = Recorder()
    sink = _sink(store)
    for start in range(0, len(text), cut):
        sink("stderr", text[start : start + cut])
    sink.close()
    assert store.lines == ["  + value = (sensitive value) (from local-exec)", "next"]


def test_a_printed_private_key_is_masked_line_by_line() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", KEY.rstrip("\n").encode() + b"\n")
    sink.close()
    assert len(store.lines) == len(KEY.splitlines())
    assert not any(len(line) >= 16 and line in KEY for line in store.lines)


def test_secrets_learnt_later_mask_the_lines_after() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", b"password is s3cretvalue\n")
    sink.end_step()
    time.sleep(0.05)
    sink.add_secrets(["s3cretvalue"])
    sink("stdout", b"password is s3cretvalue\n")
    sink.close()
    assert store.lines == ["password is s3cretvalue", "password is (sensitive value)"]


def test_ansi_colour_escapes_are_kept() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", b"\x1b[32m+\x1b[0m create\n")
    sink.close()
    assert store.lines == ["\x1b[32m+\x1b[0m create"]


def test_lines_are_written_in_batches_not_one_round_trip_each() -> None:
    store = Recorder()
    sink = _sink(store, interval=5.0, batch=200)
    sink("stdout", b"".join(b"line %d\n" % i for i in range(1000)))
    sink.close()
    assert len(store.lines) == 1000 and store.lines[-1] == "line 999"
    assert len(store.batches) <= 6 and max(len(b) for b in store.batches) == 200


def test_a_quiet_process_s_lines_are_written_after_the_interval_without_more_output() -> None:
    store = Recorder()
    sink = _sink(store, interval=0.05)
    sink("stdout", b"first\n")
    deadline = time.monotonic() + 2
    while not store.lines and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.lines == ["first"]
    sink.close()


def test_output_stops_at_the_cap_with_one_line_saying_so() -> None:
    store = Recorder()
    sink = _sink(store, cap=100 + 7 * LINE_COST)
    for i in range(50):
        sink("stdout", b"0123456789 %02d\n" % i)
    sink.close()
    assert store.lines[-1] == CUT and store.lines.count(CUT) == 1
    assert sum(len(line) + 1 for line in store.lines[:-1]) == 98 and len(store.lines) == 8


def test_an_overlong_line_is_left_out_whole_never_cut() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stdout", b"before\n" + b"x" * (LINE_CAP - 5))
    sink("stdout", b"hunter7" + b"y" * 100)
    sink("stdout", b"z" * 100 + b"\nafter\n")
    sink.close()
    assert store.lines == ["before", "… a line longer than 64 KiB left out", "after"]


def test_a_redis_error_stops_streaming_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    store = Recorder(fail=True)
    sink = _sink(store, batch=2)
    for i in range(10):
        sink("stdout", b"line %d\n" % i)
    sink.close()
    sink("stdout", b"after close\n")
    assert store.calls == 1
    assert [r for r in caplog.records if "live_output" in r.getMessage()] and len(caplog.records) == 1


def test_lines_reach_the_real_store_in_order(redis_conn: redis.Redis) -> None:
    store = RunStore(Records(redis_conn, KEY))
    store.start(HEAD)
    sink = LiveOutput(store, HEAD, _mask)
    sink("stdout", b"".join(b"%d\n" % i for i in range(450)))
    sink.close()
    assert [line.text for line in store.lines_after(HEAD.id, "0-0")] == [str(i) for i in range(450)]


def test_the_runner_hands_output_over_while_the_process_still_runs(tmp_path: Path) -> None:
    """A script that prints, sleeps, prints: the first chunk is seen before the process ends."""
    script = "import sys,time\nprint('one', flush=True)\ntime.sleep(1.5)\nprint('two', file=sys.stderr, flush=True)\n"
    seen: list[tuple[float, str, bytes]] = []

    def hook(stream: str, chunk: bytes) -> None:
        seen.append((time.monotonic(), stream, chunk))

    started = time.monotonic()
    result = run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        timeout=30,
        memory_limit_bytes=None,
        on_output=hook,
    )
    ended = started + result.duration
    assert [(s, c) for _, s, c in seen] == [("stdout", b"one\n"), ("stderr", b"two\n")]
    assert seen[0][0] < ended - 1.0
    assert result.stdout == b"one\n" and result.stderr == b"two\n"


def test_each_step_masks_with_the_secrets_plangate_holds_as_it_starts() -> None:
    """A secret plangate learns during the run (a token minted for the next step) is masked from that step on."""
    held: list[str] = []
    store = Recorder()
    sink = LiveOutput(store, HEAD, lambda: Backstop(held))  # type: ignore[arg-type]
    sink.step("$ terraform init")
    sink("stdout", b"ghx-minted-later-0123456789\n")
    held.append("ghx-minted-later-0123456789")
    sink.step("$ terraform plan")
    sink("stdout", b"ghx-minted-later-0123456789\n")
    sink.close()
    assert store.lines == [
        "$ terraform init",
        "ghx-minted-later-0123456789",
        "$ terraform plan",
        "(sensitive value)",
    ]


def _comment_mask(text: str) -> str:
    """What a comment carries of `text`: the same patterns and backstop, over the whole text at once."""
    return _mask()(text)


@pytest.mark.parametrize("indent", ["", "            "])
def test_a_key_plangate_does_not_hold_is_masked_whole_as_a_comment_masks_it(indent: str) -> None:
    """The backstop masks any PEM block from its header to its end; a line at a time sees one header line
    and then base64 lines no pattern matches, so the page must carry the block state across lines."""
    key = ec_pem()
    foreign = "".join(f"{indent}{line}\n" for line in key.splitlines())
    text = f"  + content = <<-EOT\n{foreign}        EOT\nPlan: 1 to add\n"
    store = Recorder()
    sink = _sink(store)
    for start in range(0, len(text), 7):
        sink("stdout", text[start : start + 7].encode())
    sink.close()
    body = [line.strip() for line in key.splitlines()[1:-1]]
    assert not any(part in line for line in store.lines for part in body)
    assert "(sensitive value)" in _comment_mask(text) and not any(part in _comment_mask(text) for part in body)
    assert store.lines[0] == "  + content = <<-EOT" and store.lines[-2:] == ["        EOT", "Plan: 1 to add"]


def test_a_block_cut_short_is_masked_to_the_step_s_end_and_the_next_step_is_shown() -> None:
    store = Recorder()
    sink = _sink(store)
    sink("stderr", b"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEH\n")
    sink.step("$ terraform plan")
    sink("stderr", b"Plan: 0 to add\n")
    sink.close()
    assert store.lines == ["(sensitive value)", "(sensitive value)", "$ terraform plan", "Plan: 0 to add"]


def test_a_sensitive_value_is_masked_before_the_patterns_can_cut_it() -> None:
    """As in comments: the plan's own values first, so a pattern matching a piece of one leaves none of it."""
    store = Recorder()
    sink = _sink(store)
    sink.add_secrets(["db-hunter42-Zq8sP1x"])
    sink("stdout", b"password = db-hunter42-Zq8sP1x\n")
    sink.close()
    assert store.lines == ["password = (sensitive value)"]


def test_empty_lines_cannot_make_a_run_hold_many_times_the_cap(redis_conn: redis.Redis) -> None:
    """Each line costs Redis its seal and stream entry (~66 bytes) whatever its text: counted as text only,
    a cap's worth of empty lines held 66 times the cap, and the page took seconds to read and draw."""
    store = RunStore(Records(redis_conn, KEY))
    store.start(HEAD)
    cap = 64 * 1024
    sink = LiveOutput(store, HEAD, _mask, cap=cap)
    sink("stdout", b"\n" * cap)
    sink.close()
    held = redis_conn.memory_usage(redis_keys.run_output(HEAD.id), samples=0)
    assert held is not None and held <= 2 * cap
    assert store.lines_after(HEAD.id, "0-0")[-1].text == CUT
