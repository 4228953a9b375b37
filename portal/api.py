"""The upstream services' API at /api/v1/: token auth, rate limits, JSON errors, a generated OpenAPI document."""

import logging

from django.conf import settings
from django.http import Http404, JsonResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from audit.api import SCHEMAS as MANIFEST_SCHEMAS
from audit.api import router as manifests
from audit.ledger.api import router as transparency_log
from core.api import error_body
from extraction.accounts import ServiceAccount
from extraction.api import router as bundles
from extraction.uploads import discard_part_written
from extraction.webhooks.api import router as webhooks
from portal.api_edges import declare_edges
from portal.bodies import refused_for_space
from portal.errors import REFUSED, refused
from portal.rate_limits import ClientRateThrottle, retry_after


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        account = ServiceAccount.for_token(token)
        if account is None:  # for WWW-Authenticate: expired, revoked or unknown
            request.token_refusal = ServiceAccount.token_refusal(token)
        return account


class PagetrailAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        document = declare_edges(super().get_openapi_schema(**kwargs))
        document["components"]["schemas"].update(MANIFEST_SCHEMAS)  # declared as JSON Schema, not a pydantic model
        return document

    def get_openapi_operation_id(self, operation) -> str:
        """The view's own name (`submit`, `get_job`): a generated client's functions are named after it."""
        return operation.view_func.__name__


log = logging.getLogger(__name__)
# In Django's cache: shared by every process and host.
THROTTLE = ClientRateThrottle(submissions=settings.PAGETRAIL_API_RATE, reads=settings.PAGETRAIL_API_READ_RATE)
api = PagetrailAPI(
    title="Pagetrail API",
    version="1",
    urls_namespace="api",
    auth=TokenAuth(),
    throttle=[THROTTLE],
    description="Submit PDF bundles for image extraction, follow their jobs, fetch their manifests.",
)
api.add_router("/", bundles)
api.add_router("/", manifests)
api.add_router("/", transparency_log)
api.add_router("/", webhooks)


def error(request, status: int, code: str, message: str):
    return api.create_response(request, {"error": {"code": code, "message": message}}, status=status)


TOKEN_REFUSALS = {
    "expired": "The token has expired: issue a new one for this service account in the admin.",
    "revoked": "The token, or its service account, has been revoked.",
    "unknown": "The token is not one Pagetrail issued.",
}


@api.exception_handler(AuthenticationError)
def unauthenticated(request, exc):
    """RFC 6750: without a token, only the scheme and realm; with a refused one, `invalid_token` and why."""
    reason = getattr(request, "token_refusal", None)
    if reason is None:
        answer = error(request, 401, "unauthenticated", "Send a service-account token as 'Authorization: Bearer ...'.")
        answer["WWW-Authenticate"] = 'Bearer realm="pagetrail"'
        return answer
    answer = error(request, 401, "unauthenticated", TOKEN_REFUSALS[reason])
    answer["WWW-Authenticate"] = (
        f'Bearer realm="pagetrail", error="invalid_token", error_description="The token is {reason}"'
    )
    return answer


@api.exception_handler(Http404)
def not_found(request, exc):
    return error(request, 404, "not_found", "There is nothing with that id.")


@api.exception_handler(HttpError)
def http_error(request, exc):
    if exc.status_code == 429:
        answer = error(request, 429, "rate_limited", "Too many requests for this service account; slow down.")
        answer["Retry-After"] = str(retry_after(request))
        return answer
    return error(request, exc.status_code, "bad_request", str(exc))


@api.exception_handler(ValidationError)
def invalid(request, exc):
    """The first problem as a sentence naming its field, and the field itself (`parameter`, or a `pointer` into a
    JSON body); never the input, which may be anything."""
    problem = exc.errors[0] if exc.errors else {}
    place, *path = [str(part) for part in problem.get("loc", ())] or ["request"]
    where = {"pointer": json_pointer(path[1:])} if place == "body" else {"parameter": ".".join(path)}
    name = ".".join(path) or place
    message = f"The {PLACES.get(place, place)} '{name[:100]}' {problem_said(problem)}."
    if len(exc.errors) > 1:
        message += f" ({len(exc.errors) - 1} more problem(s) in this request.)"
    return api.create_response(request, error_body("bad_request", message, **where), status=400)


PLACES = {"query": "query parameter", "path": "path parameter", "header": "header", "body": "body field"}
PLACES |= {"form": "form field", "file": "multipart part", "cookie": "cookie"}


def problem_said(problem: dict) -> str:
    """pydantic's words for a problem ("Input should be a valid integer", "Value error, ..."), as a predicate."""
    if problem.get("type") == "missing":
        return "is required"
    said = str(problem.get("msg", "is not valid")).removeprefix("Value error, ").rstrip(".")
    return f"is not valid: {said[:1].lower()}{said[1:]}"[:300]


def json_pointer(path: list[str]) -> str:
    """RFC 6901: each step with ~ written ~0 and / written ~1 (the body's own parameter name is left off)."""
    return "".join("/" + step.replace("~", "~0").replace("/", "~1") for step in path)


@api.exception_handler(MultiPartParserError)
def malformed_multipart(request, exc):
    return error(request, 400, "bad_request", "The multipart body is malformed; send one 'file' part, or the raw PDF.")


@api.exception_handler(OSError)
def storage_unavailable(request, exc):
    """A full or read-only temp or store (intake stages every upload): nothing was kept, the client may retry."""
    if isinstance(exc, (ConnectionError, TimeoutError)):  # a socket, not storage: our fault, logged as such
        return internal(request, exc)
    log.warning("API request %s %s could not store its data: %s", request.method, request.path, exc)
    discard_part_written(request)
    refused_for_space(request)
    return error(
        request,
        507,
        "storage_unavailable",
        "Pagetrail could not store the upload now (its storage is full or unavailable); nothing was kept. "
        "Try again later.",
    )


def suspicious(request, exc):
    """Too many fields or files, form fields over PAGETRAIL_MAX_FORM_BYTES: refused with a code, not a 500."""
    return refused(exc)


for kind in REFUSED:
    api.add_exception_handler(kind, suspicious)


@api.exception_handler(Exception)
def internal(request, exc):
    """Our own bug: logged with its traceback (scrubbed), answered as JSON without one."""
    log.exception("API request %s %s failed", request.method, request.path)  # its line names the request id
    return error(request, 500, "internal_error", "Pagetrail failed to handle this request; it has been logged.")


def unknown_route(request, rest=""):
    """Everything under /api/ answers JSON, also paths no operation has."""
    return JsonResponse({"error": {"code": "not_found", "message": f"No API operation at {request.path}."}}, status=404)
