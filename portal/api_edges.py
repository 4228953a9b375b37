"""What every answer under /api/ shares, whatever answered it: a request id, HEAD where GET is, and JSON for the
refusals Django or django-ninja make in their own format (an empty 405 with an Allow header, a 412).

A request's `X-Request-Id` (letters, digits and `._:-`, at most 200) is echoed; any other, or none, is replaced by
a new one, so a client and the logs (every line written while it is handled says `req=<id>`) name the same request.
"""

import copy
import re
import uuid
from http import HTTPStatus

from django.core.signals import request_finished
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse

from core.logs import begin_request, end_request
from portal.errors import api_error, is_api
from portal.rate_limits import declare_standing

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")
CODES = {
    400: ("bad_request", "The request is malformed."),
    403: ("forbidden", "This service account may not do this."),
    404: ("not_found", "There is nothing at this address."),
    412: ("precondition_failed", "The resource does not match the request's If-Match or If-Unmodified-Since."),
    500: ("internal_error", "Pagetrail failed to handle this request; it has been logged."),
}


def request_id(request) -> str:
    sent = request.headers.get("X-Request-Id", "")
    return sent if REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex


class ApiEdgesMiddleware:
    """First in MIDDLEWARE: every answer under /api/, those of later middleware included, passes through it."""

    def __init__(self, get_response):
        self.get_response = get_response
        request_finished.connect(end_request, dispatch_uid="pagetrail-end-request-log-context")

    def __call__(self, request):
        if not is_api(request):
            return self.get_response(request)
        request.request_id = request_id(request)
        head = request.method == "HEAD"
        if head:
            request.method = "GET"  # the same answer as GET, without its body
        begin_request(request.request_id)
        response = as_json(self.get_response(request))
        response["X-Request-Id"] = request.request_id
        declare_standing(request, response)
        return without_body(response) if head else response


def as_json(response: HttpResponseBase) -> HttpResponseBase:
    """An error answered in another format (an empty 405, a 412 from Django's conditional checks) as JSON."""
    if response.status_code < 400 or response.get("Content-Type", "").startswith("application/json"):
        return response
    if response.status_code == 405:
        allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
        allowed += ["HEAD"] if "GET" in allowed else []
        answer = api_error(405, "method_not_allowed", f"This route takes {', '.join(sorted(allowed))}.")
        answer["Allow"] = ", ".join(sorted(allowed))
        return answer
    code, message = CODES.get(response.status_code, ("http_error", "The request was refused."))
    return api_error(response.status_code, code, message)


def without_body(response: HttpResponseBase) -> HttpResponseBase:
    """HEAD: the headers GET would send (its Content-Length included), no body."""
    if isinstance(response, StreamingHttpResponse):
        response.streaming_content = iter(())  # its file stays open until the server closes the answer, as for GET
    elif isinstance(response, HttpResponse):
        response["Content-Length"] = str(len(response.content))
        response.content = b""
    return response


HEADER = {"schema": {"type": "string"}}
# Not declared as a request header: schemathesis would then send "invalid" ones, which are replaced, not refused.
REQUEST_ID_HEADER = {
    "description": "The request's own X-Request-Id (letters, digits and ._:- up to 200), else a new one.",
    "required": True,
    "schema": {"type": "string", "pattern": REQUEST_ID.pattern.join("^$")},
}
WWW_AUTHENTICATE = {
    "description": 'Bearer realm="pagetrail", and for a refused token error="invalid_token" with '
    "error_description saying it is expired, revoked or unknown.",
    "required": True,
    **HEADER,
}
RETRY_AFTER = {
    "description": "Seconds until this account may send again.",
    "required": True,
    "schema": {"type": "integer", "minimum": 1},
}
# draft-ietf-httpapi-ratelimit-headers: the quota left and the policies, on the answers of throttled operations.
RATE_LIMIT = {
    "RateLimit": {"description": 'The quota left in each policy\'s window, e.g. `"default";r=50;t=30`.', **HEADER},
    "RateLimit-Policy": {"description": 'The policies in force, e.g. `"default";q=100;w=60`.', **HEADER},
}
ALLOW = {"description": "The methods this route takes (HEAD wherever GET is).", "required": True, **HEADER}
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
# What any operation may answer, whatever it is: a Host or request this server refuses, a method the route does not
# take, too many requests, our own bug.
EVERY_OPERATION = {
    "400": "`bad_request` (a malformed request), `bad_host` (a Host this server does not answer for).",
    "405": "`method_not_allowed`: a method this route does not take.",
    "429": "`rate_limited`: too many requests; Retry-After says when to send again.",
    "500": "`internal_error`: Pagetrail failed to handle the request; it has been logged (no traceback here).",
}
UNAUTHENTICATED = "`unauthenticated`: no service-account token, or an expired, revoked or unknown one."
HEADERS_BY_STATUS = {
    "401": {"WWW-Authenticate": WWW_AUTHENTICATE},
    "405": {"Allow": ALLOW},
    "429": {"Retry-After": RETRY_AFTER},
}


def declare_edges(document: dict) -> dict:
    """What every answer carries, in the document: the refusals any operation may answer (and 401 where a token is
    asked for), the request id and rate-limit headers, WWW-Authenticate on 401, Allow on 405, Retry-After on 429
    (portal/api.py), and a HEAD operation beside each GET (its headers, no body)."""
    document = copy.deepcopy(document)  # the operations' declarations are module constants, shared between them
    for methods in document.get("paths", {}).values():
        for operation in methods.values():
            declare_refusals(operation)
            for status, response in operation["responses"].items():
                headers = response.setdefault("headers", {})
                headers.update({"X-Request-Id": REQUEST_ID_HEADER, **RATE_LIMIT, **HEADERS_BY_STATUS.get(status, {})})
        if "get" in methods:
            methods["head"] = head_of(methods["get"])
    return document


def declare_refusals(operation: dict) -> None:
    responses = operation.setdefault("responses", {})
    for status in list(responses):
        responses[str(status)] = responses.pop(status)
    every = {**EVERY_OPERATION, **({"401": UNAUTHENTICATED} if operation.get("security") else {})}
    for status, description in every.items():
        response = responses.setdefault(status, {"description": description, **ERROR})
        if response.get("description") == HTTPStatus(int(status)).phrase:  # django-ninja's word for it: ours says more
            response["description"] = description


def head_of(get: dict) -> dict:
    responses = {
        status: {key: value for key, value in response.items() if key != "content"}
        for status, response in get.get("responses", {}).items()
    }
    return {
        **get,
        "operationId": f"{get['operationId']}_head",
        "summary": f"{get.get('summary', '')} (headers only)".strip(),
        "responses": responses,
    }
