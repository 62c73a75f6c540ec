"""`GET /repos/{o}/{r}/contents/{path}?ref=`: one file, as JSON (base64) or raw with the raw media type."""

from __future__ import annotations

import base64
import hashlib
import subprocess

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from standin import gitops
from standin.auth import not_found
from standin.web import base_of, repo_access

RAW_TYPES = ("application/vnd.github.raw", "application/vnd.github.v3.raw", "application/vnd.github.raw+json")


def _blob(repo_path: object, ref: str, path: str) -> bytes | None:
    result = subprocess.run(
        ["git", "--git-dir", str(repo_path), "show", f"{ref}:{path}"], capture_output=True, check=False
    )
    return result.stdout if result.returncode == 0 else None


def get_contents(request: Request) -> Response:
    repo = repo_access(request)
    if isinstance(repo, JSONResponse):
        return repo
    path = request.path_params["path"].strip("/")
    ref = request.query_params.get("ref") or repo.default_branch
    sha = gitops.rev(repo.path, ref)
    data = _blob(repo.path, sha, path) if sha else None
    if data is None:
        return not_found()
    if any(t in request.headers.get("accept", "") for t in RAW_TYPES):
        return Response(data, media_type="application/vnd.github.raw")
    base = base_of(request)
    blob_sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return JSONResponse(
        {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.encodebytes(data).decode(),
            "sha": blob_sha,
            "url": f"{base}/repos/{repo.full_name}/contents/{path}?ref={ref}",
            "html_url": f"{base}/{repo.full_name}/blob/{ref}/{path}",
            "download_url": f"{base}/{repo.full_name}/raw/{ref}/{path}",
        }
    )


routes = [Route("/repos/{owner}/{repo}/contents/{path:path}", get_contents, methods=["GET"])]
