"""A run's terraform output, stored line by line as it is printed, for its run page (plumbing.run_store).

The runner hands chunks over as it reads them (runner.OnOutput). Each stream (stdout, stderr) is cut
into lines of its own: a partial line waits for its newline, so a chunk boundary never cuts a secret
in two, and only complete lines are masked and kept (what is left at a step's end is a line too). A
line longer than LINE_CAP is left out whole rather than cut, for the same reason. A PEM block spans
lines, and the backstop masks it from header to end in a comment: a stream inside one (its header seen,
its end not yet) has each line masked whole until the end line, or the step's end. Lines are written by
a thread of their own, in batches (every INTERVAL seconds or BATCH lines, one pipeline each): the
process's pipes are never kept waiting on Redis, and a chatty plan costs few round trips.

The page is a view, never the gate: a Redis error stops the streaming (logged once) and is never
raised to the terraform step. At OUTPUT_CAP bytes one last line says the rest is not kept; each line
counts LINE_COST bytes beyond its text, what Redis keeps for it (its seal and its stream entry), so
a plan printing empty lines cannot make a run hold many times the cap.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence

from core.render.mask import MASK, Masker
from core.runs import RunHead
from plumbing.run_store import OUTPUT_CAP, RunStore

log = logging.getLogger("plangate.runs")

BATCH = 200  # lines written in one round trip at most
INTERVAL = 0.25  # seconds: lines wait this long at most before they are written
LINE_CAP = 64 * 1024  # bytes: a longer line is left out, never cut
LINE_COST = 64  # bytes Redis keeps for a line beyond its text: the seal's 48 and the stream entry's own
CLOSE_WAIT = 30.0  # seconds a run's end waits for its last lines to be written
CUT = f"… output cut at {OUTPUT_CAP // (1024 * 1024)} MiB: plangate keeps no more of one run (docs/limits.md)"
_PATH = re.compile(r"/\S*/")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]+-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]+-----")


def step_line(tool: str, args: Sequence[str]) -> str:
    """`$ terraform plan -input=false …`: where a step starts on the page (worker paths shown by name only)."""
    return "$ " + " ".join([tool.rsplit("/", 1)[-1], *(_PATH.sub("", a) for a in args)])


class LiveOutput:
    """The output sink of one run. `masks` makes the mask applied to every line (the job's mask patterns
    and the backstop of plangate's own secrets), made again as each step starts: the secrets plangate
    holds grow as the job goes (a token minted for that very step). `add_secrets` adds values learnt as
    the run goes (a plan's sensitive values, before its apply)."""

    def __init__(
        self,
        store: RunStore,
        head: RunHead,
        masks: Callable[[], Callable[[str], str]],
        *,
        cap: int = OUTPUT_CAP,
        batch: int = BATCH,
        interval: float = INTERVAL,
    ) -> None:
        self._store, self._head, self._masks = store, head, masks
        self._mask = masks()
        self._cap, self._batch, self._interval = cap, batch, interval
        self._secrets: Masker | None = None
        self._partial: dict[str, bytearray] = {}
        self._overlong: set[str] = set()  # streams inside a line already too long to keep
        self._in_pem: set[str] = set()  # streams inside a PEM block: its header seen, its end not yet
        self._pending: list[str] = []
        self._kept = 0  # bytes of text accepted so far
        self._full = False
        self._broken = False
        self._closed = False
        self._lock = threading.Condition()
        self._writer = threading.Thread(target=self._write_loop, name=f"run-output-{head.id}", daemon=True)
        self._writer.start()

    def add_secrets(self, secrets: Iterable[str]) -> None:
        values = sorted(s for s in secrets if s)
        with self._lock:
            self._secrets = Masker(values) if values else None

    def step(self, title: str) -> None:
        """A new step starts: what the last one left unfinished is a line of its own, then `title`; the
        mask is made again for it."""
        self._safely(self._end_step)
        self._safely(self._renew)
        self._safely(lambda: self._accept([title]))

    def end_step(self) -> None:
        """The step ended: the partial line of each stream is a line."""
        self._safely(self._end_step)

    def __call__(self, stream: str, chunk: bytes) -> None:
        """runner.OnOutput: one chunk of `stream`."""
        self._safely(lambda: self._feed(stream, chunk))

    def close(self) -> None:
        """Everything written that can be (waiting CLOSE_WAIT seconds at most); the writer thread ended."""
        self.end_step()
        with self._lock:
            self._closed = True
            self._lock.notify()
        self._writer.join(CLOSE_WAIT)
        if self._writer.is_alive():
            self._stop(f"Redis did not take the last lines within {CLOSE_WAIT:.0f}s")

    def _safely(self, work: Callable[[], None]) -> None:
        """`work`, its failure only stopping the stream: the page is a view, it may never fail a step,
        and a line that could not be masked is never kept."""
        try:
            work()
        except Exception as exc:
            self._stop(f"{type(exc).__name__}: {exc}")

    def _renew(self) -> None:
        self._mask = self._masks()

    def _end_step(self) -> None:
        rest = [(stream, bytes(buf)) for stream, buf in self._partial.items() if buf and stream not in self._overlong]
        self._partial.clear()
        self._overlong.clear()
        texts = [self._text(stream, raw) for stream, raw in rest]
        self._in_pem.clear()
        self._accept(texts)

    def _feed(self, stream: str, chunk: bytes) -> None:
        if self._full or self._broken:  # nothing more is kept: no line is cut or masked for nothing
            self._partial.clear()
            return
        buf = self._partial.setdefault(stream, bytearray())
        buf += chunk
        lines = []
        while (end := buf.find(b"\n")) >= 0:
            raw = bytes(buf[:end])
            del buf[: end + 1]
            if stream in self._overlong:
                self._overlong.discard(stream)
            else:
                lines.append(self._text(stream, raw))
        if len(buf) > LINE_CAP and stream not in self._overlong:
            self._overlong.add(stream)
            lines.append(f"… a line longer than {LINE_CAP // 1024} KiB left out")
        if stream in self._overlong:
            buf.clear()
        self._accept(lines)

    def _text(self, stream: str, raw: bytes) -> str:
        """One complete line, masked: CRLF and LF end a line, a lone CR too (what a progress line redraws)."""
        text = raw.decode("utf-8", "replace").removesuffix("\r")
        return "\n".join(self._masked(stream, part) for part in text.split("\r"))

    def _masked(self, stream: str, text: str) -> str:
        """One line masked as a comment masks it: the plan's sensitive values first (so no pattern cuts
        one and leaves the rest), then the patterns and the backstop; inside a PEM block, all of it."""
        if stream in self._in_pem:
            end = _PEM_END.search(text)
            if end is None:
                return MASK
            self._in_pem.discard(stream)
            text = MASK + text[end.end() :]
        opened = list(_PEM_BEGIN.finditer(text))
        if opened and _PEM_END.search(text, opened[-1].end()) is None:
            self._in_pem.add(stream)
        secrets = self._secrets
        return self._mask(secrets(text) if secrets is not None else text)

    def _accept(self, texts: list[str]) -> None:
        lines = [line for text in texts for line in text.split("\n")]
        if not lines:
            return
        with self._lock:
            if self._full or self._broken:
                return
            for line in lines:
                size = len(line.encode()) + 1 + LINE_COST
                if self._kept + size > self._cap:
                    self._full = True
                    self._pending.append(CUT)
                    break
                self._kept += size
                self._pending.append(line)
            if len(self._pending) >= self._batch:
                self._lock.notify()

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                if not self._closed and len(self._pending) < self._batch:
                    self._lock.wait(self._interval)
                batch, self._pending = self._pending, []
                done = self._closed
            self._write(batch)
            if done:
                with self._lock:
                    batch, self._pending = self._pending, []
                self._write(batch)
                return

    def _write(self, lines: list[str]) -> None:
        for start in range(0, len(lines), self._batch):
            if self._broken:
                return
            self._safely(functools.partial(self._store.append, self._head, lines[start : start + self._batch]))

    def _stop(self, why: str) -> None:
        with self._lock:
            if self._broken:
                return
            self._broken = True
            self._pending = []
        log.warning(json.dumps({"run": self._head.id, "repo": self._head.repo, "live_output": "stopped", "why": why}))
