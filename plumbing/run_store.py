"""Run pages' records in Redis (core.runs): written by the workers as a run goes, read by the web process.

Everything is sealed (plumbing.records): Redis is reachable from the network terraform shares, and a page
that a plan's code could rewrite ("0 to destroy", "approved by @bob") would mislead the reviewer it
exists for. A record or line whose seal does not verify is not shown. Each output line is sealed for its
run's key, so a line cannot be moved into another run's output.

Output is capped per run (OUTPUT_CAP bytes of masked text, then one line saying so); records expire with
their job's result (core.redis_keys.RUN_TTL).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from core import redis_keys
from core.runs import Line, RunGate, RunHead, RunPlan, Stored, gate_from, head_from, masked_plan, plan_from, to_plain
from plumbing.records import Records

OUTPUT_CAP = 1024 * 1024  # bytes of output kept per run
READ_BATCH = 1000  # lines per read of the stream


def ttl(kind: str) -> int:
    return redis_keys.RUN_TTL.get(kind, redis_keys.RUN_DEFAULT_TTL)


def _field(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RunStore:
    def __init__(self, records: Records) -> None:
        self.records = records
        self.conn = records.conn

    def start(self, head: RunHead) -> None:
        """A run begins (or begins again, after its worker died): its output starts empty."""
        key, out, index = (
            redis_keys.run(head.id),
            redis_keys.run_output(head.id),
            redis_keys.runs_at(head.repo_id, head.sha),
        )
        life = ttl(head.kind)
        with self.conn.pipeline(transaction=False) as pipe:
            pipe.delete(key, out)
            pipe.hset(key, "head", self.records.seal(f"{key}#head", json.dumps(to_plain(head))))
            pipe.expire(key, life)
            pipe.sadd(index, head.id)
            pipe.expire(index, life)
            pipe.execute()

    def append(self, head: RunHead, texts: Sequence[str]) -> None:
        """Lines of output, already masked, in order (one round trip)."""
        if not texts:
            return
        out = redis_keys.run_output(head.id)
        with self.conn.pipeline(transaction=False) as pipe:
            for text in texts:
                pipe.xadd(out, {"l": self.records.seal(out, text)})
            pipe.expire(out, ttl(head.kind))
            pipe.execute()

    def finish(self, head: RunHead, plan: RunPlan | None) -> None:
        """How the run ended (`head` with `ended` and `outcome` set) and the plan it made, if any."""
        key = redis_keys.run(head.id)
        self.records.hset(key, "head", json.dumps(to_plain(head)))
        if plan is not None:
            self.records.hset(key, "plan", json.dumps(to_plain(plan)))
        self.conn.expire(key, ttl(head.kind))

    def set_gate(self, run_ids: Iterable[str], gate: RunGate) -> None:
        """The gate's latest verdict on these runs' plans (a PR's plan is judged again on every approval)."""
        text = json.dumps(to_plain(gate))
        for one in run_ids:
            key = redis_keys.run(one)
            if self.conn.exists(key):
                self.records.hset(key, "gate", text)

    def mask_plan(self, run_id: str, mask: Callable[[str], str]) -> None:
        """The run's drawn plan with `mask` over it again, when it has one and the mask changes it."""
        key = redis_keys.run(run_id)
        text = self.records.unseal(f"{key}#plan", self.conn.hget(key, "plan"))
        if text is None:
            return
        plan = plan_from(json.loads(text))
        masked = masked_plan(plan, mask)
        if masked != plan:
            self.records.hset(key, "plan", json.dumps(to_plain(masked)))

    def head(self, run_id: str) -> RunHead | None:
        key = redis_keys.run(run_id)
        text = self.records.unseal(f"{key}#head", self.conn.hget(key, "head"))
        return None if text is None else head_from(json.loads(text))

    def read(self, run_id: str) -> Stored | None:
        """The run's head, plan, gate and output so far; None when there is no such run (or it expired)."""
        fields = self.records.hgetall(redis_keys.run(run_id))
        if "head" not in fields:
            return None
        plan = plan_from(json.loads(fields["plan"])) if "plan" in fields else None
        gate = gate_from(json.loads(fields["gate"])) if "gate" in fields else None
        return Stored(head_from(json.loads(fields["head"])), plan, gate, tuple(self.lines_after(run_id, "0-0")))

    def lines_after(self, run_id: str, after: str, limit: int | None = None) -> list[Line]:
        """The output lines after stream id `after` ("0-0": from the start), at most `limit`."""
        out = redis_keys.run_output(run_id)
        found: list[Line] = []
        start = f"({after}" if after != "0-0" else "-"
        while limit is None or len(found) < limit:
            batch: Any = self.conn.xrange(out, min=start, count=READ_BATCH)
            if not batch:
                break
            found += [line for entry in batch if (line := self.line(run_id, entry[0], entry[1])) is not None]
            start = f"({_field(batch[-1][0])}"
        return found[:limit] if limit is not None else found

    def line(self, run_id: str, entry_id: bytes | str, fields: dict[Any, Any]) -> Line | None:
        """One stream entry as a line, if its seal verifies (the web's live stream reads entries itself)."""
        raw = fields.get(b"l", fields.get("l"))
        text = self.records.unseal(redis_keys.run_output(run_id), raw)
        return None if text is None else Line(_field(entry_id), text)

    def siblings(self, repo_id: int, sha: str) -> list[RunHead]:
        """The runs about one commit, oldest first."""
        raw: Any = self.conn.smembers(redis_keys.runs_at(repo_id, sha))
        heads = [self.head(_field(one)) for one in raw]
        return sorted((h for h in heads if h is not None), key=lambda h: (h.started, h.project))
