"""Git smart HTTP (fetch only) at `{base}/{owner}/{name}.git`, served by `git http-backend` as CGI."""

from __future__ import annotations

import os
import subprocess

import anyio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from standin.auth import basic_token
from standin.web import state_of

CHALLENGE = {"WWW-Authenticate": 'Basic realm="GitHub"'}


async def git_endpoint(request: Request) -> Response:
    state = state_of(request)
    rest = request.path_params["rest"]
    if "receive-pack" in rest or "receive-pack" in request.url.query:
        return PlainTextResponse("Pushing is not supported by the stand-in\n", 403)
    repo = state.repo_by_name(request.path_params["owner"], request.path_params["repo"])
    token = basic_token(state, request)
    if token is None:
        return PlainTextResponse("Invalid username or token.\n", 401, headers=CHALLENGE)
    if repo is None or repo.installation_id != token.installation_id:
        return PlainTextResponse("Repository not found.\n", 404)
    body = await request.body()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(repo.path.parent.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH_INFO": f"/{repo.path.parent.name}/{repo.path.name}/{rest}",
        "QUERY_STRING": request.url.query,
        "REQUEST_METHOD": request.method,
        "CONTENT_TYPE": request.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_ADDR": request.client.host if request.client else "127.0.0.1",
        "REMOTE_USER": "x-access-token",
    }
    if "git-protocol" in request.headers:
        env["GIT_PROTOCOL"] = request.headers["git-protocol"]
    if "content-encoding" in request.headers:
        env["HTTP_CONTENT_ENCODING"] = request.headers["content-encoding"]

    def run() -> bytes:
        proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=False)
        return proc.stdout

    output = await anyio.to_thread.run_sync(run)
    return _cgi_response(output)


def _cgi_response(output: bytes) -> Response:
    """Split CGI output into status, headers and body."""
    head, sep, body = output.partition(b"\r\n\r\n")
    if not sep:
        head, _, body = output.partition(b"\n\n")
    status = 200
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            headers[name.strip()] = value.strip()
    media_type = headers.pop("Content-Type", None)
    return Response(body, status, headers=headers, media_type=media_type)


routes = [Route("/{owner}/{repo}.git/{rest:path}", git_endpoint, methods=["GET", "POST"])]
