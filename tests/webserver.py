"""Real web servers on a free loopback port (runserver as `make run` starts it, gunicorn as `make serve` does),
a raw-socket client that streams bodies generated on the fly, and the servers' memory as the kernel counts it."""

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from core.processes import ROOT
from tests.procs import Portal, profile_env
from tests.waiting import wait_until

CHUNK = memoryview(bytes(1024 * 1024))
BOUNDARY = "pagetrail-attack"
CSRF_COOKIE = "Cookie: csrftoken=" + "a" * 32 + "\r\n"
# Signs `name` in as staff in a session of the database (as a login would), optionally allowed to upload.
SIGN_IN = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import Permission
from django.contrib.sessions.backends.db import SessionStore
user = get_user_model().objects.create_user({name!r}, is_staff=True)
if {may_upload}:
    user.user_permissions.add(Permission.objects.get(codename="submit_bundle"))
session = SessionStore()
session.update({{SESSION_KEY: str(user.pk), HASH_SESSION_KEY: user.get_session_auth_hash(),
                BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend"}})
session.create()
print(session.session_key)
"""


@contextlib.contextmanager
def api_deployment(data_dir: Path, **env):
    """gunicorn, an intake worker and an extraction worker on this run's profile (PostgreSQL, Redis and S3 of their
    own on the production one), with a service account's token (`.token`), stopped afterwards."""
    with profile_env("api") as deployment:
        web = WebServer("gunicorn", data_dir, **env, **deployment)
        try:
            web.bearer()
            web.portal.start_worker(PAGETRAIL_CLUSTER="intake")
            web.portal.start_worker()
            yield web
        finally:
            web.stop()
            web.portal.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WebServer:
    """`kind` is "runserver" or "gunicorn"; the portal in `data_dir` is migrated first. Several servers on one
    data dir (several hosts of one deployment) need a `log_name` each."""

    def __init__(self, kind: str, data_dir: Path, *gunicorn_args: str, log_name: str = "", **env):
        self.portal = Portal(data_dir, **env)
        self.portal.manage("migrate", "--noinput")
        self.port = free_port()
        self.log_path = data_dir / f"{log_name or kind}.log"
        address = f"127.0.0.1:{self.port}"
        command = (
            [sys.executable, "manage.py", "runserver", "--insecure", "--noreload", address]
            if kind == "runserver"
            else [
                str(Path(sys.executable).parent / "gunicorn"),
                "-c",
                "portal/gunicorn.conf.py",
                "-b",
                address,
                "-w",
                "2",
                *gunicorn_args,
                "portal.wsgi",
            ]
        )
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.portal.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.wait_until_serving()

    def wait_until_serving(self, timeout=60.0):
        def serving() -> bool:
            assert self.process.poll() is None, self.log()
            try:
                return request(self.port, b"GET /admin/login/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").status == 200
            except OSError:
                return False

        wait_until(serving, timeout, lambda: f"the server did not answer:\n{self.log()}", interval=0.1)

    def bearer(self) -> str:
        """An Authorization header with the token of a service account `feeder` (created once)."""
        if not hasattr(self, "token"):
            self.token = self.portal.manage(
                "shell",
                "-c",
                "from extraction.accounts import ServiceAccount; print("
                "ServiceAccount.objects.create(name='feeder').issue_token())",
            ).stdout.split()[-1]
        return f"Authorization: Bearer {self.token}\r\n"

    def signed_in(self, name: str, may_upload: bool) -> str:
        """A Cookie header with the session of a new staff user `name` and the CSRF cookie of CSRF_COOKIE."""
        key = self.portal.manage("shell", "-c", SIGN_IN.format(name=name, may_upload=may_upload)).stdout.split()[-1]
        return f"Cookie: sessionid={key}; csrftoken={'a' * 32}\r\n"

    def wait_for_log(self, text: str, timeout=10.0) -> str:
        return wait_until(
            lambda: text in (log := self.log()) and log,
            timeout,
            lambda: f"{text!r} never appeared in the log:\n{self.log()[-2000:]}",
            interval=0.05,
        )

    def pids(self) -> list[int]:
        """The server and its worker processes."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = [int(pid) for pid in children.read_text().split()] if children.exists() else []
        return [self.process.pid, *found]

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


def rss(pid: int) -> int:
    """Resident memory in bytes (0 once the process is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) * 1024


class PeakGrowth:
    """The largest growth in resident memory of any of the server's processes over its idle size, while running."""

    def __init__(self, server: WebServer):
        self.server, self.idle, self.peak, self.running = server, {}, 0, True
        self.idle = {pid: rss(pid) for pid in server.pids()}
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while self.running:
            for pid in self.server.pids():
                self.peak = max(self.peak, rss(pid) - self.idle.setdefault(pid, rss(pid)))
            time.sleep(0.01)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join(timeout=10)


@dataclass
class Outcome:
    status: int | None  # None: the server answered nothing
    sent: int  # body bytes the server took from the client
    closed: bool  # the server closed (or reset) the connection
    response: bytes


def head(path: str, length: int | None, *headers: str, multipart=False) -> bytes:
    """A POST's head (and a multipart body's first part header) declaring `length` bytes of body (None: chunked)."""
    preamble = (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        )
        if multipart
        else ""
    )
    kind = f"multipart/form-data; boundary={BOUNDARY}" if multipart else "application/pdf"
    framing = "Transfer-Encoding: chunked\r\n" if length is None else f"Content-Length: {length + len(preamble)}\r\n"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {kind}\r\n{framing}{''.join(headers)}\r\n{preamble}"
    ).encode()


def request(port: int, head: bytes, timeout=30.0) -> Outcome:
    return stream(port, head, 0, timeout=timeout)


def stream(
    port: int, head: bytes, body_bytes: int, timeout=60.0, chunked=False, stop_on_answer=True, answer_grace=0.0
) -> Outcome:
    """Send `head`, then up to `body_bytes` of zeros (generated on the fly, as chunks when `chunked`) while
    watching for an answer. Stops sending when the server closes (or answers, with `stop_on_answer`), and waits
    at most `timeout` in all for the connection to end. `answer_grace`: seconds to wait for an answer to the
    head alone before the body starts (a server that answers at once then gets its answer read, not reset)."""
    deadline, body = time.monotonic() + timeout, Body(body_bytes, chunked)
    response, closed = b"", False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(head)
        conn.setblocking(False)
        if answer_grace and select.select([conn], [], [], answer_grace)[0]:
            response, closed = receive(conn)
        while time.monotonic() < deadline and not closed:
            sending = body.left() and not (response and stop_on_answer)
            readable, writable, _ = select.select([conn], [conn] if sending else [], [], 0.5)
            if readable:
                data, closed = receive(conn)
                response += data
            elif writable:
                closed = not body.send_to(conn)
    return Outcome(status=status_of(response), sent=body.sent, closed=closed, response=response)


class Body:
    """Zeros, `total` bytes of them, sent as the socket takes them (chunked framing when asked)."""

    def __init__(self, total: int, chunked: bool):
        self.total, self.chunked, self.sent, self.outbox = total, chunked, 0, memoryview(b"")

    def left(self) -> bool:
        return bool(self.outbox) or self.sent < self.total or (self.chunked and self.sent == self.total > 0)

    def refill(self):
        size = min(len(CHUNK), self.total - self.sent)
        if size and self.chunked:
            self.outbox = memoryview(b"%x\r\n" % size + CHUNK[:size].tobytes() + b"\r\n")
        elif size:
            self.outbox = CHUNK[:size]
        elif self.chunked:
            self.outbox, self.chunked = memoryview(b"0\r\n\r\n"), False
        self.sent += size

    def send_to(self, conn) -> bool:
        """False when the server has closed the connection."""
        if not self.outbox:
            self.refill()
        try:
            self.outbox = self.outbox[conn.send(self.outbox) :]
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


def slow_headers(port: int, seconds: float) -> Outcome:
    """A request whose headers never end, one byte every half second, until the server closes or `seconds` pass."""
    deadline = time.monotonic() + seconds
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as conn:
        conn.sendall(b"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        conn.settimeout(0.5)
        while time.monotonic() < deadline:
            try:
                conn.sendall(b"s")
                data = conn.recv(65536)
            except (BrokenPipeError, ConnectionResetError):
                return Outcome(status=None, sent=0, closed=True, response=b"")
            except TimeoutError:
                continue
            if data:  # an answer: read it to its end
                conn.settimeout(max(deadline - time.monotonic(), 0.1))
                rest = iter(lambda: conn.recv(65536), b"")
                data += b"".join(rest)
            return Outcome(status=status_of(data), sent=0, closed=True, response=data)
    return Outcome(status=None, sent=0, closed=False, response=b"")


def receive(conn) -> tuple[bytes, bool]:
    try:
        data = conn.recv(65536)
    except BlockingIOError:
        return b"", False
    except ConnectionResetError:
        return b"", True
    return data, not data


def status_of(response: bytes) -> int | None:
    first = response.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) > 1 and first[1].isdigit() else None
