"""Liveness and readiness for a load balancer: /healthz (this process answers) and /readyz (the database, the
broker and both stores answer, each within PAGETRAIL_READY_TIMEOUT_SECONDS), answered before every other
middleware."""

import logging
import math
import os

from django.conf import settings
from django.core.files.storage import storages
from django.db import connection
from django.http import JsonResponse

from core import stores

log = logging.getLogger(__name__)
NOT_READY = {
    "database": "The database does not answer.",
    "broker": "The task broker does not answer.",
    "inputs": "The inputs store cannot be reached.",
    "outputs": "The outputs store cannot be reached.",
}


class HealthMiddleware:
    """First in MIDDLEWARE. A load balancer probes each host by its address, over plain HTTP, without a session:
    the host check (ALLOWED_HOSTS), the HTTPS redirect, sessions, the second factor and the login lockout are
    not for it, and /healthz must not touch the database. No login is asked, so an answer names what failed,
    never the error itself (that goes to the log)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == "/healthz":
            return _answer({"status": "ok"}, 200)
        if request.path == "/readyz":
            failed = {name: f"{NOT_READY[name]} ({why})" for name, check in CHECKS.items() if (why := _fails(check))}
            if failed:
                return _answer({"status": "not_ready", "failed": failed}, 503)
            return _answer({"status": "ready"}, 200)
        return self.get_response(request)


def _answer(body: dict, status: int) -> JsonResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _fails(check) -> str:
    """The error's type when `check` raises (logged with its message), else ""."""
    try:
        check()
    except Exception as exc:  # whatever stops a part answering makes the host not ready
        log.warning("not ready: %s: %s: %s", check.__name__, type(exc).__name__, exc)
        return type(exc).__name__
    return ""


def bound() -> float:
    """Seconds each probe may take to connect and to be answered: a part that hangs fails, it does not hang us."""
    return settings.PAGETRAIL_READY_TIMEOUT_SECONDS


def database() -> None:
    """A connection of the probe's own, so that its timeouts bind: PostgreSQL's connect_timeout covers the
    connection and its start-up exchange, statement_timeout the query; a server that accepts and never answers
    fails within them. SQLite has no network: the shared connection answers."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return
    params = connection.get_connection_params()
    params["connect_timeout"] = max(1, math.ceil(bound()))  # libpq takes whole seconds, 1 at least
    params["options"] = f"{params.get('options', '')} -c statement_timeout={int(bound() * 1000)}".strip()
    raw = connection.get_new_connection(params)
    try:
        raw.execute("SELECT 1")
    finally:
        raw.close()


def broker() -> None:
    from django_q.brokers import get_broker
    from django_q.brokers.redis_broker import Redis
    from django_q.conf import Conf

    queue = get_broker()
    if isinstance(queue, Redis):  # a client of the probe's own, with connect and read timeouts
        import redis

        timeouts = dict(socket_connect_timeout=bound(), socket_timeout=bound(), retry_on_timeout=False)
        if isinstance(Conf.REDIS, str):
            queue.connection = redis.Redis.from_url(Conf.REDIS, **timeouts)
        else:
            queue.connection = redis.StrictRedis(**{**Conf.REDIS, **timeouts})
    try:
        queue.queue_size()  # Redis' LLEN, or a count on the ORM broker's table: the queue itself answers
    finally:
        if isinstance(queue, Redis):
            queue.connection.close()


def store_reachable(alias: str) -> None:
    """An S3 store's bucket answers a HEAD; a file-system store's directory can be written (or, before its
    first file, the nearest directory above it: a fresh deployment is ready)."""
    storage = storages[alias]
    if (root := stores.local_path(storage, "")) is not None:
        existing = next(p for p in (root, *root.parents) if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise NotADirectoryError(f"{existing} is not a directory this process can write")
    elif stores.is_s3(storage):
        s3_client(storage).head_bucket(Bucket=storage.bucket_name)


def s3_client(storage):
    """The store's client with the probe's timeouts and no retry (botocore's defaults: 60 s reads, retried)."""
    from botocore.config import Config

    config = storage.client_config.merge(
        Config(connect_timeout=bound(), read_timeout=bound(), retries={"total_max_attempts": 1})
    )
    return storage._create_session().client(
        "s3",
        region_name=storage.region_name,
        use_ssl=storage.use_ssl,
        endpoint_url=storage.endpoint_url,
        config=config,
        verify=storage.verify,
    )


def inputs() -> None:
    store_reachable("inputs")


def outputs() -> None:
    store_reachable("outputs")


CHECKS = {"database": database, "broker": broker, "inputs": inputs, "outputs": outputs}
