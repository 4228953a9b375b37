"""Every log line written while handling a bundle or a job carries its correlation id and job id, every line its
host; secrets, tokens and presigned query strings never reach a log line."""

import logging
import re
import socket
from collections.abc import Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

# Read-only default: a job's context is set whole, never changed in place.
_context: ContextVar[Mapping] = ContextVar("pagetrail_log_context", default=MappingProxyType({}))

HOST = socket.gethostname()  # several hosts write to one log store: each line says whose it is
# What a request adds to the context (begin_request, carry) and end_request takes away again.
REQUEST_FIELDS = ("request_id", "correlation_id", "job_id")

SECRETS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?i)\b(basic\s+)[A-Za-z0-9+/]{8,}=*"),
    re.compile(r"\bpt_[A-Za-z0-9_-]{16,}"),  # service-account tokens
    re.compile(r"\bwhsec_[A-Za-z0-9+/]{16,}=*"),  # webhook signing secrets
    re.compile(r"(?i)([?&](?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|Signature|AWSAccessKeyId)=)[^&\s]+"),
    re.compile(r"(?i)((?:api[_-]?key|secret|password|passwd|token|sessionid)[\"']?\s*[:=]\s*[\"']?)[^\s\"',&;]+"),
    # Signed URLs and documents (`signature=...`, `"signature": "..."`), not prose ("bad signature: ...").
    re.compile(r"(?i)(signature(?:=|[\"']\s*:\s*[\"']))[^\s\"'&,;]+"),
    # A whole header value, as a header line or as a key in a printed dict or WSGI environ: every cookie at once.
    re.compile(r"(?i)((?:authorization|cookie)[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n]+"),
]
# What every LogRecord has; anything else on a record was passed in `extra` (Django passes the request object).
STANDARD_FIELDS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
SECRET_NAME = re.compile(r"(?i)api_?key|secret|password|token|signature|cookie|authorization|session")


@contextmanager
def job_context(correlation_id: str = "", job_id: int | None = None):
    """Log lines inside carry these ids (a contextvar: safe across threads and worker processes)."""
    token = _context.set({"correlation_id": correlation_id, "job_id": job_id})
    try:
        yield
    finally:
        _context.reset(token)


def begin_request(request_id: str) -> None:
    """Log lines from now until end_request name this request id (its answer's X-Request-Id): Django's own
    line about the answer (django.request) is written after every middleware has returned, so a context
    manager around them would end too early."""
    _context.set(MappingProxyType({**_context.get(), "request_id": request_id}))


def carry(correlation_id: str, job_id: int | None = None) -> None:
    """The rest of this request's lines name the bundle it turned out to be about (an upload, once hashed), the
    web server's access line included: a request's ids last until end_request."""
    _context.set(MappingProxyType({**_context.get(), "correlation_id": correlation_id, "job_id": job_id}))


def end_request(**kwargs) -> None:
    """Connected to request_finished (the server closing the answer, after gunicorn wrote its access line)."""
    if _context.get().keys() & set(REQUEST_FIELDS):
        _context.set(MappingProxyType({k: v for k, v in _context.get().items() if k not in REQUEST_FIELDS}))


def scrub(text: str) -> str:
    for pattern in SECRETS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[redacted]", text)
    return text


def scrubbed_field(name: str, value):
    """An extra field as a formatter may print it: numbers as they are, anything else as scrubbed text.

    A field named for a secret is dropped whole: its value alone (`extra={"token": ...}`) matches no pattern.
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return "[redacted]" if SECRET_NAME.search(name) else scrub(str(value))


class RefusalWithoutTraceback(logging.Filter):
    """A refused permission is an answer (403), not a failure: one warning line, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info, record.exc_text = None, None
        return True


class ContextFilter(logging.Filter):
    """Adds host, correlation_id, job_id and request_id to each record and scrubs its message (for every handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _context.get()
        record.host = HOST
        record.correlation_id = context.get("correlation_id", "")
        record.job_id = context.get("job_id")
        request_id = context.get("request_id", "")
        record.request_id = request_id
        record.request_tag = f" req={request_id}" if request_id else ""  # the plain format's
        record.msg, record.args = scrub(record.getMessage()), ()
        for name in record.__dict__.keys() - STANDARD_FIELDS:
            setattr(record, name, scrubbed_field(name, getattr(record, name)))
        if record.exc_info:
            record.exc_text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            # Formatters that format the exception again from exc_info (python-json-logger) would print it
            # unscrubbed: they get only the scrubbed text.
            record.exc_info = None
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True
