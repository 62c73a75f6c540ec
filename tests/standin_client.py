"""Talking to the GitHub stand-in as a client would, shared by its tests: keys, App JWTs, installation
tokens, an HTTP client, a webhook receiver, and the plain stand-in + repository + client fixtures."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gidgethub.sansio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from standin import StandIn, start
from standin.state import Repo

SECRET = "It's a Secret to Everybody"


def make_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def app_jwt(key: str, iss: Any = 4242, iat_delta: int = -60, exp_delta: int = 540) -> str:
    now = int(time.time())
    claims = {"iat": now + iat_delta, "exp": now + exp_delta, "iss": iss}  # pyjwt refuses an int iss
    return jwt.api_jws.encode(json.dumps(claims).encode(), key, algorithm="RS256")


def client(gh: StandIn, auth: str | None = None) -> httpx.Client:
    headers = {"Accept": "application/vnd.github+json"}
    if auth:
        headers["Authorization"] = auth
    return httpx.Client(base_url=gh.base_url, headers=headers)


def mint(gh: StandIn, key: str, repo: Repo) -> str:
    with client(gh, f"Bearer {app_jwt(key)}") as c:
        r = c.post(f"/app/installations/{repo.installation_id}/access_tokens")
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


class Receiver:
    """A webhook endpoint that keeps what it got, verified as gidgethub (and plangate) verifies it."""

    def __init__(self) -> None:
        received: list[tuple[dict[str, str], bytes]] = []
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[gidgethub.sansio.Event]:
        return [gidgethub.sansio.Event.from_http(h, b, secret=SECRET) for h, b in self.received]

    def actions(self) -> list[tuple[str, str | None]]:
        return [(e.event, e.data.get("action")) for e in self.events()]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="module")
def key() -> str:
    return make_key()


@pytest.fixture
def gh(tmp_path: Path, key: str) -> Iterator[StandIn]:
    standin = StandIn(tmp_path / "git", key, app_id=4242)
    with start(standin):
        yield standin


@pytest.fixture
def repo(gh: StandIn) -> Repo:
    return gh.create_repo("acme", "infra", {"main.tf": 'resource "terraform_data" "a" {}\n'})


@pytest.fixture
def api(gh: StandIn, key: str, repo: Repo) -> Iterator[httpx.Client]:
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        yield c
