"""App JWT claims and the Redis-shared installation-token cache, against the stand-in and real Redis."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
import redis

from plumbing.records import Records
from standin.facade import StandIn
from standin.keys import new_private_key_pem
from standin.server import Running, start
from tests.keys import public_pem, rsa_pem
from workers.adapters.github.auth import REFRESH_MARGIN, GitHubAuthError, TokenCache, app_jwt, installation_client
from workers.adapters.github.client import RateLimited, deferrable

APP_ID = 77


def test_jwt_claims_are_backdated_and_short_lived() -> None:
    before = int(time.time())
    token = app_jwt(APP_ID, rsa_pem())
    claims = jwt.decode(token, public_pem(rsa_pem()), algorithms=["RS256"], options={"verify_exp": True})
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    assert claims["iss"] == str(APP_ID)
    assert before - 61 <= claims["iat"] <= before - 59
    assert claims["exp"] - before <= 600


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[StandIn, Running]]:
    gh = StandIn(tmp_path / "gh", rsa_pem(), app_id=APP_ID, token_ttl=dt.timedelta(minutes=60))
    gh.create_repo("acme", "infra", {"README.md": "x\n"})
    with start(gh) as server:
        yield gh, server


def _installation(gh: StandIn) -> int:
    return next(iter(gh.state.installations))


def _mints(gh: StandIn) -> int:
    return sum(1 for r in gh.state.requests if r.method == "POST" and r.path.endswith("/access_tokens"))


def test_token_is_minted_once_and_reused(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    inst = _installation(gh)

    async def many() -> set[str]:
        return set(await asyncio.gather(*(cache.token(inst) for _ in range(10))))

    tokens = asyncio.run(many())
    assert len(tokens) == 1 and _mints(gh) == 1
    assert next(iter(tokens)).startswith("ghs_") and len(next(iter(tokens))) > 40


CHILD = """
import asyncio, json, sys
import redis
from plumbing.records import Records
from workers.adapters.github.auth import TokenCache
url, api, inst, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.stdin.read()
cache = TokenCache(redis.Redis.from_url(url), app_id=77, private_key=key, api_url=api)
async def main():
    return await asyncio.gather(*(cache.token(inst) for _ in range(5)))
print(json.dumps(asyncio.run(main())))
"""


def test_two_processes_share_one_token(
    github: tuple[StandIn, Running], redis_url: str, redis_conn: redis.Redis
) -> None:
    gh, server = github
    inst = str(_installation(gh))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, redis_url, server.base_url, inst],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(rsa_pem())
        p.stdin.close()
    outputs = [json.loads(p.stdout.read()) for p in procs if p.stdout is not None]
    for p in procs:
        p.wait(60)
    assert all(p.returncode == 0 for p in procs)
    assert len({t for out in outputs for t in out}) == 1
    assert _mints(gh) == 1


def test_token_near_expiry_is_refreshed(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    inst = _installation(gh)
    first = asyncio.run(cache.token(inst))
    key = f"plangate:installation-token:{inst}"
    records = Records(redis_conn, rsa_pem())
    entry = json.loads(records.decrypt(key, redis_conn.get(key)) or "{}")
    entry["expires"] = time.time() + REFRESH_MARGIN - 1  # inside the refresh margin
    redis_conn.set(key, records.encrypt(key, json.dumps(entry)))
    second = asyncio.run(cache.token(inst))
    assert second != first and _mints(gh) == 2


def test_tokens_are_encrypted_in_redis_and_a_planted_one_is_ignored(
    github: tuple[StandIn, Running], redis_conn: redis.Redis
) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    inst = _installation(gh)
    token = asyncio.run(cache.token(inst))
    key = f"plangate:installation-token:{inst}"
    assert token.encode() not in (redis_conn.get(key) or b"")
    planted = json.dumps({"token": "ghs_planted", "expires": time.time() + 3600})
    redis_conn.set(key, planted)
    assert asyncio.run(cache.token(inst)) not in ("ghs_planted", token) and _mints(gh) == 2


def test_what_a_job_posts_is_masked_for_the_apps_secrets(
    github: tuple[StandIn, Running], redis_conn: redis.Redis
) -> None:
    gh, server = github
    secret = "webhook-secret-xyz123"
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url, secrets=[secret])
    inst = _installation(gh)
    repo = next(iter(gh.state.repos.values()))
    pr = gh.open_pr(repo, "b", "alice", "t", {"x.txt": "x\n"}, deliver=False)
    token = asyncio.run(cache.token(inst))
    key_line = rsa_pem().splitlines()[2]

    async def post() -> None:
        async with installation_client(cache, inst, server.base_url) as client:
            body = f"{secret} {token} {key_line}\n{rsa_pem()}"
            await client.post(f"/repos/acme/infra/issues/{pr.number}/comments", data={"body": body})

    asyncio.run(post())
    posted = gh.comments_on(repo, pr.number)[-1].body
    assert secret not in posted and token not in posted and key_line not in posted
    assert "PRIVATE KEY" not in posted and "(sensitive value)" in posted


def test_a_long_rate_limit_on_minting_hands_the_job_back_to_rq(
    github: tuple[StandIn, Running], redis_conn: redis.Redis
) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    gh.faults.secondary_limit("POST", r"/app/installations/\d+/access_tokens", retry_after=120)

    async def in_a_job() -> str:
        deferrable.set(True)  # as in a plan, drift or command job (workers.rescheduling)
        return await cache.token(_installation(gh))

    with pytest.raises(RateLimited) as limited:  # not GitHubAuthError: the job is run again after the wait
        asyncio.run(in_a_job())
    assert limited.value.wait >= 120


def test_short_lived_tokens_are_never_cached(tmp_path: Path, redis_conn: redis.Redis) -> None:
    gh = StandIn(tmp_path / "gh", rsa_pem(), app_id=APP_ID, token_ttl=dt.timedelta(minutes=4))
    gh.create_repo("acme", "infra", {"README.md": "x\n"})
    with start(gh) as server:
        cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
        inst = _installation(gh)
        asyncio.run(cache.token(inst))
        asyncio.run(cache.token(inst))
        assert _mints(gh) == 2


def test_wrong_key_fails_without_leaking(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    other = TokenCache(redis_conn, app_id=APP_ID, private_key=new_private_key_pem(), api_url=server.base_url)
    with pytest.raises(GitHubAuthError) as err:
        asyncio.run(other.token(_installation(gh)))
    assert "PRIVATE KEY" not in str(err.value)
    assert "401" in str(err.value)


def test_installation_client_calls_the_configured_api_url(
    github: tuple[StandIn, Running], redis_conn: redis.Redis
) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)

    async def repos() -> list[str]:
        async with installation_client(cache, _installation(gh), server.base_url) as client:
            return [
                r["full_name"] async for r in client.getiter("/installation/repositories", iterable_key="repositories")
            ]

    assert asyncio.run(repos()) == ["acme/infra"]
