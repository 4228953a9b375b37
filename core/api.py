"""What every app's API shares: the row ids a path takes, the one error shape, the refusal of a query parameter an
operation does not take, and the fields that say a parameter is deprecated."""

from datetime import datetime
from typing import Annotated

from django.http import HttpResponse, HttpResponseBase
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from ninja import Path

# An id the database can hold: a larger number is a bad request, not a database overflow (500).
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def error_body(code: str, message: str, *, parameter: str = "", pointer: str = "") -> dict:
    """`{"error": {"code", "message"}}`, naming the one field at fault when there is one: `parameter` (a query
    parameter, path parameter or header) or `pointer` (RFC 6901 into a JSON body, or a multipart part's name)."""
    where = {"parameter": parameter} if parameter else {"pointer": pointer} if pointer else {}
    return {"error": {"code": code, "message": message, **where}}


def unknown_parameters_refusal(request, known: set[str]) -> dict | None:
    """The error body refusing the request's query parameters not in `known` (naming the first), or None."""
    if message := unknown_parameters_message(request, known):
        return error_body("bad_request", message, parameter=min(set(request.GET) - known))
    return None


def deprecated(response: HttpResponseBase, since: datetime, sunset: datetime) -> None:
    """An answer that used something on its way out says so: `Deprecation` (RFC 9745, since when) and `Sunset`
    (RFC 8594, when it stops working); docs/api.md#versioning-and-deprecation."""
    response["Deprecation"] = f"@{int(since.timestamp())}"
    response["Sunset"] = http_date(sunset.timestamp())


def unknown_parameters_message(request, known: set[str]) -> str:
    """Why the request's query is refused (its parameters not in `known`), or "" when it is not."""
    unknown = sorted(set(request.GET) - known)
    takes = ", ".join(sorted(known)) or "none"
    return f"Unknown query parameter(s): {', '.join(unknown)[:200]}; this operation takes {takes}." if unknown else ""


IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "The ETag a client holds: 304 with no body when it is still the resource's.",
    "schema": {"type": "string"},
}
VALIDATORS = {
    "ETag": {
        "description": "The sha256 of the bytes, quoted.",
        "required": True,
        "schema": {"type": "string", "pattern": '^"[0-9a-f]{64}"$'},
    },
    "Last-Modified": {
        "description": "When the bytes were written (HTTP date).",
        "required": True,
        "schema": {"type": "string"},
    },
    "Cache-Control": {
        "description": "private, no-cache: keep the bytes, ask again before using them (retention may delete them).",
        "required": True,
        "schema": {"type": "string"},
    },
}
NOT_MODIFIED = {"description": "Not modified: the If-None-Match ETag is still the resource's.", "headers": VALIDATORS}


def not_modified(request, sha256: str, written: datetime) -> HttpResponseBase | None:
    """304 when the client's copy of these immutable bytes (named by their sha256) is current, checked before the
    bytes are read; None to send them, with `validated(...)`'s headers."""
    headers = HttpResponse()
    validated(headers, sha256, written)
    answer = get_conditional_response(
        request, etag=headers["ETag"], last_modified=int(written.timestamp()), response=headers
    )
    return None if answer is headers else answer


def validated(response: HttpResponseBase, sha256: str, written: datetime) -> HttpResponseBase:
    response["ETag"], response["Last-Modified"] = f'"{sha256}"', http_date(written.timestamp())
    response["Cache-Control"] = "private, no-cache"  # kept, but asked again: a retention run may delete an asset
    return response
