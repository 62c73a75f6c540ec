"""Writes to GitHub are paced per installation, across every worker, so a burst never trips the
secondary rate limit.

GitHub asks integrations to send content-creating requests serially and about one a second. A token
bucket in Redis (one Lua script, atomic for all workers) allows that rate on average and a small burst
on top, so one PR's handful of writes goes out at once (no delay when nothing else is happening)
while fifteen PRs at once are spread out to the documented pace.
"""

from __future__ import annotations

import asyncio
import time

import redis

from core import redis_keys

RATE = 1.0  # writes per second per installation, on average
BURST = 8  # writes that may go out at once after a quiet spell

# KEYS[1] bucket; ARGV: now, rate, burst. Returns the seconds to wait (0: the write may go now).
# A write that must wait takes its token now (the bucket goes negative), so waiters are served in order.
_TAKE = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local now, rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate) - 1
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 60)
if tokens >= 0 then return '0' end
return tostring(-tokens / rate)
"""


class Pacer:
    def __init__(self, conn: redis.Redis, rate: float = RATE, burst: int = BURST) -> None:
        self._conn = conn
        self._rate = rate
        self._burst = burst
        self._take = conn.register_script(_TAKE)
        self.waited = 0.0  # seconds this process spent waiting, for metrics

    def reserve(self, installation_id: int) -> float:
        """Take a write slot; the seconds to wait before using it."""
        raw = self._take(keys=[redis_keys.pace(installation_id)], args=[time.time(), self._rate, self._burst])
        return float(raw.decode() if isinstance(raw, bytes) else raw)

    async def write_slot(self, installation_id: int) -> float:
        """Wait for a write slot; returns how long that took."""
        wait = self.reserve(installation_id)
        if wait > 0:
            await asyncio.sleep(wait)
            self.waited += wait
        return wait
