"""A simulator of the Infrai job API, for tests, demos and the evaluation harness.

A real HTTP server on the pinned contract (it serves the discovery documents and takes its routes
from `infrai_contract.json`) with our own extractor behind it. Fault profiles make it misbehave the
way a managed API does: 429s, bursts of 5xx, slow and stuck jobs, a submit accepted but never
answered, failed jobs, broken downloads, discovery documents that drift from the pin.
Only the standard library and `extraction.pdf`; no Django.
"""

import copy
import dataclasses
import hashlib
import hmac
import json
import logging
import math
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from email import policy
from email.message import Message
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from extraction.pdf import Limits, SandboxError, extract_images

from .contract import load_pin

log = logging.getLogger(__name__)

DISCOVERY_PATH = "/v1/discovery"
CAPABILITY = "pdf.extract_images"
TERMINAL = {"completed", "failed", "cancelled"}


@dataclass(frozen=True)
class Faults:
    """How a profile departs from a healthy provider; the defaults are healthy."""

    throttle_burst: int = 0  # of every throttle_burst + 1 requests, the first throttle_burst get 429
    retry_after: int = 1  # seconds, sent with each 429
    error_burst: int = 0  # the first error_burst requests to each route get 503, 500, 503, ...
    hold_seconds: float = 0.0  # a job is reported running until this long after its submission
    drop_first_submit: bool = False  # the first submit of a key creates the job, then no answer
    accept_delay: float = 0.0  # seconds between creating a job and answering its first submit
    fail_jobs: bool = False
    download_fault: str = ""  # "truncate" or "corrupt" the first download of each asset
    drift: bool = False  # discovery documents differ from the pin
    partial_pages: tuple[int, ...] = ()  # pages reported as not fully extracted


@dataclass(frozen=True)
class Knobs:
    """Constructor knobs; each profile reads the ones it needs."""

    burst: int | None = None  # rate_limited: 1 (every other request); flaky_5xx: 2
    retry_after: int = 1
    slow_seconds: float = 2.0
    accept_delay_seconds: float = 5.0
    partial_pages: tuple[int, ...] = (1,)


PROFILES = {
    "healthy": lambda k: Faults(),
    "rate_limited": lambda k: Faults(throttle_burst=k.burst or 1, retry_after=k.retry_after),
    "flaky_5xx": lambda k: Faults(error_burst=k.burst or 2),
    "slow": lambda k: Faults(hold_seconds=k.slow_seconds),
    "never_finishes": lambda k: Faults(hold_seconds=math.inf),
    "accept_then_drop": lambda k: Faults(drop_first_submit=True),
    "slow_accept": lambda k: Faults(accept_delay=k.accept_delay_seconds),
    "job_fails": lambda k: Faults(fail_jobs=True),
    "truncated_download": lambda k: Faults(download_fault="truncate"),
    "corrupt_download": lambda k: Faults(download_fault="corrupt"),
    "schema_drift": lambda k: Faults(drift=True),
    "partial": lambda k: Faults(partial_pages=tuple(k.partial_pages)),
}


@dataclass
class Request:
    method: str
    path: str
    headers: Message  # the handler's: case-insensitive get()
    body: bytes


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    cut_at: int | None = None  # a fault: send only this many body bytes, then close the connection
    drop: bool = False  # a fault: close the connection without answering


def json_reply(status: int, document: dict, headers: dict | None = None) -> Reply:
    return Reply(status, json.dumps(document).encode(), {"Content-Type": "application/json", **(headers or {})})


def error_reply(status: int, code: str, message: str, headers: dict | None = None) -> Reply:
    return json_reply(status, {"error": {"code": code, "message": message}}, headers)


@dataclass
class Job:
    id: str
    key: str
    sha256: str
    submitted_at: float
    status: str = "queued"
    pages: int | None = None
    assets: dict = field(default_factory=dict)  # asset id -> WrittenImage
    warnings: list = field(default_factory=list)  # [{"page": int | None, "message": str}]
    error: dict | None = None
    future: Future | None = None


class Simulator:
    """An Infrai provider at `url` between `start()` and `stop()`.

    `profile` names a fault profile (see PROFILES); knobs: burst, retry_after, slow_seconds,
    partial_pages. `clock` decides when held jobs (slow, never_finishes) are reported done, so
    tests can move it. Counters for tests: `submissions`, `job_ids_by_key`, `requests`.
    """

    # Set by start(): the server, the temp directory of inputs and outputs, the extractions' threads.
    _server: "Server"
    _root: Path
    _pool: ThreadPoolExecutor

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str = "",
        profile: str = "healthy",
        data_dir: str | Path | None = None,
        *,
        clock=time.monotonic,
        workers: int = 2,
        limits: Limits = Limits(),
        **knobs,
    ):
        if not api_key:
            raise ValueError("The simulator needs an API key.")
        if profile not in PROFILES:
            raise ValueError(f"Unknown profile {profile!r}; known: {', '.join(sorted(PROFILES))}.")
        self.host, self.port, self.profile = host, port, profile
        self.faults = PROFILES[profile](Knobs(**knobs))
        self._key, self._clock, self._limits, self._workers = api_key.encode(), clock, limits, workers
        self.max_upload_bytes = limits.max_bytes
        self._data_dir = data_dir
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()  # for faults that depend on what came before
        self.jobs: dict[str, Job] = {}
        self.job_ids_by_key: dict[str, str] = {}
        self.requests: list[tuple[str, str, int | None]] = []  # status None: dropped unanswered
        pin = load_pin()
        self.documents = drifted(pin) if self.faults.drift else pin
        self._routes = compile_routes(pin["capability"]["routes"])
        self._download_path = pin["capability"]["routes"]["download_asset"]["path"]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def submissions(self) -> int:
        return len(self.jobs)

    def start(self) -> int:
        self._server = Server((self.host, self.port), self)  # first: a port in use leaves nothing behind
        self.port = self._server.server_address[1]
        self._root = Path(tempfile.mkdtemp(prefix="infrai-sim-", dir=self._data_dir))
        (self._root / "inputs").mkdir()
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="infrai-sim-job")
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name="infrai-sim", daemon=True).start()
        log.info("Infrai simulator at %s, profile %s", self.url, self.profile)
        return self.port

    def stop(self) -> None:
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for every extraction to end (a held job is still reported running afterwards)."""
        with self._lock:
            futures = [job.future for job in self.jobs.values() if job.future is not None]
        return not wait(futures, timeout).not_done

    def handle(self, request: Request) -> Reply:
        route, params = self._match(request)
        try:
            reply = self._fault_before(route) or self._unauthorized(request)
            if reply is None and route is None:
                reply = error_reply(404, "not_found", f"No route for {request.method} {request.path}.")
            return reply or getattr(self, f"_on_{route}")(request, **params)
        except Exception:
            log.exception("simulator failed on %s %s", request.method, request.path)
            return error_reply(500, "internal", "The simulator failed; see its log.")

    def record(self, method: str, path: str, status: int | None) -> None:
        with self._lock:
            self.requests.append((method, path, status))
        log.info("%s %s -> %s", method, path, "dropped" if status is None else status)

    def _match(self, request: Request) -> tuple[str | None, dict]:
        for name, method, pattern in self._routes:
            found = pattern.fullmatch(request.path)
            if found and method == request.method:
                return name, found.groupdict()
        return None, {}

    def _count(self, what: str) -> int:
        """How many times `what` happened before this one."""
        with self._lock:
            self._seen[what] += 1
            return self._seen[what] - 1

    def _fault_before(self, route: str | None) -> Reply | None:
        throttle, errors = self.faults.throttle_burst, self.faults.error_burst
        if throttle and self._count("request") % (throttle + 1) < throttle:
            return error_reply(
                429,
                "rate_limited",
                "Too many requests; wait for Retry-After seconds.",
                {"Retry-After": str(self.faults.retry_after)},
            )
        nth = self._count(f"route {route}") if errors else 0
        if nth < errors:
            status, code = ((503, "unavailable"), (500, "internal"))[nth % 2]
            return error_reply(status, code, "The service failed to answer; try again.")
        return None

    def _unauthorized(self, request: Request) -> Reply | None:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(key.strip().encode(), self._key):
            return None
        return error_reply(401, "unauthorized", "A valid bearer key is required.")

    def _on_discovery(self, request: Request) -> Reply:
        return json_reply(200, self.documents["discovery"])

    def _on_capability(self, request: Request, capability: str) -> Reply:
        if capability != CAPABILITY:
            return error_reply(404, "not_found", f"No capability {capability!r}.")
        return json_reply(200, self.documents["capability"])

    def _on_submit(self, request: Request) -> Reply:
        form = parse_form(request)
        if not form.get("idempotency_key") or "sha256" not in form or "document" not in form:
            return error_reply(
                422,
                "invalid_request",
                "Send multipart/form-data with idempotency_key, sha256 and a document file part.",
            )
        key, document = form["idempotency_key"].decode(errors="replace"), form["document"]
        if request.headers.get("Idempotency-Key") != key:
            return error_reply(
                422, "idempotency_key_mismatch", "The Idempotency-Key header must equal the idempotency_key field."
            )
        digest = hashlib.sha256(document).hexdigest()
        if form["sha256"].decode(errors="replace").strip().lower() != digest:
            return error_reply(422, "checksum_mismatch", "The sha256 field does not match the document.")
        if not document.startswith(b"%PDF-"):
            return error_reply(422, "invalid_document", "The document is not a PDF.")
        job, created = self._job_for(key, digest, document)
        if job is None:
            return error_reply(422, "idempotency_conflict", "This idempotency key was used for another document.")
        if created and self.faults.drop_first_submit:
            return Reply(0, drop=True)
        if created and self.faults.accept_delay:
            time.sleep(self.faults.accept_delay)  # accepted; the client waits (and may die) before it hears so
        with self._lock:  # a new job is described as accepted, even if a worker has picked it up since
            status = "queued" if created else self._status(job)
        return json_reply(202 if created else 200, {"job_id": job.id, "status": status, "idempotency_key": key})

    def _job_for(self, key: str, digest: str, document: bytes) -> tuple[Job | None, bool]:
        """The key's job (None if it was for other bytes) and whether this call created it."""
        write_atomically(self._root / "inputs" / f"{digest}.pdf", document)
        with self._lock:
            if key in self.job_ids_by_key:
                job = self.jobs[self.job_ids_by_key[key]]
                return (job if job.sha256 == digest else None), False
            job = Job(id=f"job_{uuid.uuid4().hex}", key=key, sha256=digest, submitted_at=self._clock())
            self.jobs[job.id], self.job_ids_by_key[key] = job, job.id
            job.future = self._pool.submit(self._run, job)
        return job, True

    def _run(self, job: Job) -> None:
        self._update(job, status="running")
        out_dir = self._root / "jobs" / job.id
        out_dir.mkdir(parents=True)
        try:
            if self.faults.fail_jobs:
                raise SandboxError("extraction_failed", "The document could not be processed.", permanent=True)
            extraction = extract_images(self._root / "inputs" / f"{job.sha256}.pdf", out_dir, self._limits)
        except SandboxError as exc:
            self._update(job, status="failed", error={"code": exc.code, "message": exc.message})
            return
        except Exception:
            log.exception("extraction of job %s failed", job.id)
            self._update(job, status="failed", error={"code": "internal", "message": "The extractor failed."})
            return
        pages = [p for p in self.faults.partial_pages if p <= extraction.pages]
        warnings = [page_warning(text) for text in extraction.warnings] + [
            {"page": p, "message": f"Page {p}: the page could not be fully extracted."} for p in pages
        ]
        assets = {f"asset{i}": asset for i, asset in enumerate(extraction.assets)}
        self._update(job, status="completed", pages=extraction.pages, assets=assets, warnings=warnings)

    def _update(self, job: Job, **changes) -> None:
        with self._lock:
            for name, value in changes.items():
                setattr(job, name, value)

    def _status(self, job: Job) -> str:
        """The status a client sees: a held job (slow, never_finishes) stays running until its time."""
        if job.status in TERMINAL and self._clock() < job.submitted_at + self.faults.hold_seconds:
            return "running"
        return job.status

    def _on_get_job(self, request: Request, job_id: str) -> Reply:
        with self._lock:
            job = self.jobs.get(job_id)
            document = self._job_document(job) if job else None
        if document is None:
            return error_reply(404, "not_found", f"No job {job_id!r}.")
        return json_reply(200, document)

    def _job_document(self, job: Job) -> dict:
        status = self._status(job)
        done = status in TERMINAL  # nothing of the result shows before the job is reported done
        return {
            "job_id": job.id,
            "status": status,
            "idempotency_key": job.key,
            "pages": job.pages if done else None,
            "assets": [self._asset_document(job, asset_id, asset) for asset_id, asset in job.assets.items()]
            if done
            else [],
            "warnings": list(job.warnings) if done else [],
            "partial": done and bool(job.warnings),
            "error": job.error if done else None,
        }

    def _asset_document(self, job: Job, asset_id: str, asset) -> dict:
        return {
            "id": asset_id,
            "sha256": asset.sha256,
            "size": asset.size,
            "content_type": asset.content_type,
            "width": asset.width,
            "height": asset.height,
            "placements": [{"page": page, "index": index} for page, index in asset.placements],
            "download_url": self._download_path.format(job_id=job.id, asset_id=asset_id),
        }

    def _on_download_asset(self, request: Request, job_id: str, asset_id: str) -> Reply:
        with self._lock:
            job = self.jobs.get(job_id)
            asset = job.assets.get(asset_id) if job and self._status(job) == "completed" else None
        if asset is None:
            return error_reply(404, "not_found", f"No asset {asset_id!r} in job {job_id!r}.")
        body = (self._root / "jobs" / job_id / asset.filename).read_bytes()
        reply = Reply(200, body, {"Content-Type": asset.content_type, "X-Content-SHA256": asset.sha256})
        fault = self.faults.download_fault
        # Only the first download of each asset is spoiled, so that a retry recovers.
        if not fault or self._count(f"download {job_id} {asset_id}") > 0:
            return reply
        if fault == "truncate":
            return dataclasses.replace(reply, cut_at=len(body) // 2)
        return dataclasses.replace(reply, body=bytes([body[0] ^ 0xFF]) + body[1:])


def compile_routes(routes: dict) -> list[tuple[str, str, re.Pattern]]:
    """(name, method, path pattern) for the pinned routes and the discovery documents."""
    templates = {name: (route["method"], route["path"]) for name, route in routes.items()}
    templates["discovery"] = ("GET", DISCOVERY_PATH)
    templates["capability"] = ("GET", DISCOVERY_PATH + "/{capability}")
    return [
        (name, method, re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))))
        for name, (method, path) in templates.items()
    ]


def drifted(pin: dict) -> dict:
    """The pin as a provider might change it without notice: a new job state, a renamed asset field."""
    published = copy.deepcopy(pin)
    job = published["capability"]["schemas"]["job"]["properties"]
    job["status"]["enum"].append("paused")
    asset = job["assets"]["items"]
    asset["properties"]["href"] = asset["properties"].pop("download_url")
    asset["required"] = ["href" if name == "download_url" else name for name in asset["required"]]
    return published


def parse_form(request: Request) -> dict[str, bytes]:
    """The parts of a multipart/form-data body by name; {} if the body is not one."""
    content_type = request.headers.get("Content-Type", "")
    if not content_type.startswith("multipart/form-data"):
        return {}
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=policy.HTTP).parsebytes(head + request.body)
    parts: dict[str, bytes] = {}
    for part in message.iter_parts() if message.is_multipart() else ():
        name, payload = part.get_param("name", header="content-disposition"), part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = payload
    return parts


def page_warning(text: str) -> dict:
    """The extractor's warnings start 'Page N' when they concern one page."""
    found = re.match(r"Page (\d+)\b", text)
    return {"page": int(found.group(1)) if found else None, "message": text}


def write_atomically(path: Path, data: bytes) -> None:
    # Two submits of the same bytes may write the same file at once; each renames a whole file.
    tmp = path.with_name(f".{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Server(ThreadingHTTPServer):
    """Tracks its open connections so that `stop()` also ends idle keep-alive ones."""

    daemon_threads = True

    def __init__(self, address, simulator: Simulator):
        self.simulator, self.connections_lock = simulator, threading.Lock()
        self.connections: set[socket.socket] = set()
        super().__init__(address, Handler)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as pooled clients expect
    server_version = "infrai-simulator/1"
    timeout = 60  # an idle keep-alive connection is closed after this long
    server: Server

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def serve(self):
        simulator = self.server.simulator
        path = urlsplit(self.path).path
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= simulator.max_upload_bytes:
            self.close_connection = True  # the unread body would be taken for the next request
            reply = (
                error_reply(413, "payload_too_large", "The document is larger than the service accepts.")
                if length > 0
                else error_reply(400, "invalid_request", "The Content-Length is invalid.")
            )
        else:
            reply = simulator.handle(Request(self.command, path, self.headers, self.rfile.read(length)))
        simulator.record(self.command, path, None if reply.drop else reply.status)
        self.write(reply)

    def write(self, reply: Reply) -> None:
        if reply.drop:
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in {**reply.headers, "Content-Length": str(len(reply.body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body[: reply.cut_at])
        if reply.cut_at is not None:
            self.close_connection = True

    def log_message(self, format, *args):
        # The simulator logs each request with its outcome; this is http.server's own chatter.
        log.debug("%s " + format, self.address_string(), *args)
