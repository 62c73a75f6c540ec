"""What GitHub refuses in a check run's create or update body, with GitHub's answers.

The schemas are the request bodies of `checks/create` and `checks/update` in GitHub's OpenAPI description
(tests/fixtures/github/rest/checks__create.json, checks__update.json), reduced to the keywords that validate.
After them come the rules GitHub checks on the record itself (tests/fixtures/github/LIMITS.md).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from standin.request_schema import Schema, invalid_request, problems

MAX_TEXT = 65535
CONCLUSIONS = ["action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"]

_STRING: Schema = {"type": "string"}
_TIME: Schema = {"type": "string", "format": "date-time"}
_ANNOTATION: Schema = {
    "type": "object",
    "properties": {
        "path": _STRING,
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "start_column": {"type": "integer"},
        "end_column": {"type": "integer"},
        "annotation_level": {"type": "string", "enum": ["notice", "warning", "failure"]},
        "message": _STRING,
        "title": _STRING,
        "raw_details": _STRING,
    },
    "required": ["path", "start_line", "end_line", "annotation_level", "message"],
}
_IMAGE: Schema = {
    "type": "object",
    "properties": {"alt": _STRING, "image_url": _STRING, "caption": _STRING},
    "required": ["alt", "image_url"],
}
_OUTPUT: Schema = {
    "type": "object",
    "properties": {
        "title": _STRING,
        "summary": {"type": "string", "maxLength": MAX_TEXT},
        "text": {"type": "string", "maxLength": MAX_TEXT},
        "annotations": {"type": "array", "maxItems": 50, "items": _ANNOTATION},
        "images": {"type": "array", "items": _IMAGE},
    },
    "required": ["title", "summary"],
}
_ACTIONS: Schema = {
    "type": "array",
    "maxItems": 3,
    "items": {
        "type": "object",
        "properties": {
            "label": {"type": "string", "maxLength": 20},
            "description": {"type": "string", "maxLength": 40},
            "identifier": {"type": "string", "maxLength": 20},
        },
        "required": ["label", "description", "identifier"],
    },
}
_COMMON: Schema = {
    "name": _STRING,
    "details_url": _STRING,
    "external_id": _STRING,
    "started_at": _TIME,
    "conclusion": {"type": "string", "enum": CONCLUSIONS},
    "completed_at": _TIME,
    "output": _OUTPUT,
    "actions": _ACTIONS,
}
CREATE: Schema = {
    "type": "object",
    "properties": {
        "head_sha": _STRING,
        **_COMMON,
        "status": {"type": "string", "enum": ["queued", "in_progress", "completed"]},
    },
    "required": ["name", "head_sha"],
}
UPDATE: Schema = {
    "type": "object",
    "properties": {
        **_COMMON,
        "status": {"type": "string", "enum": ["queued", "in_progress", "completed", "waiting", "requested", "pending"]},
    },
    "anyOf": [
        {"properties": {"status": {"enum": ["completed"]}}, "required": ["conclusion"]},
        {"properties": {"status": {"enum": ["queued", "in_progress"]}}},
    ],
}


def _validation_failed(error: dict[str, str], docs: str) -> JSONResponse:
    body = {"message": "Validation Failed", "errors": [error], "documentation_url": docs, "status": "422"}
    return JSONResponse(body, 422)


def refusal(schema: Schema, body: dict[str, Any], docs: str) -> JSONResponse | None:
    """GitHub's 422 for this body, or None when it would be accepted."""
    found = problems(schema, body)
    if found:
        return invalid_request(found, docs)
    if (body.get("status") == "completed" or "completed_at" in body) and "conclusion" not in body:
        return _validation_failed({"resource": "CheckRun", "code": "missing_field", "field": "conclusion"}, docs)
    output = body.get("output", {})
    for key in ("summary", "text"):
        if len(output.get(key, "").encode()) > MAX_TEXT:  # the schema counts characters, the record bytes
            error = {"resource": "CheckRun", "code": "custom", "field": key}
            return _validation_failed({**error, "message": f"{key} exceeds a maximum bytesize of {MAX_TEXT}"}, docs)
    return None
