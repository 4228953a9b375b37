"""The production profile for bench.pipeline: PostgreSQL, the Redis broker and S3 (moto on loopback).

The database named by --database-url is dropped and created anew (give the benchmark one of its own);
the queue name and the buckets are new for each run, so nothing of an earlier run is picked up.
"""

import contextlib
import subprocess
import uuid
from collections import Counter
from pathlib import Path

from tests.run_profiles import DATABASE_URL, REDIS_URL, production_env, start_s3

# What tests.run_profiles sets for a production run: the buckets, the S3 server, the secrets every host shares.
SHARED = (
    "PAGETRAIL_INPUT_BUCKET",
    "PAGETRAIL_OUTPUT_BUCKET",
    "AWS_S3_ENDPOINT_URL",
    "AWS_S3_REGION_NAME",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "SECRET_KEY",
    "PAGETRAIL_SIGNING_KEY",
    "PAGETRAIL_MLDSA_SIGNING_KEY",
)
DEFAULTS = (DATABASE_URL, REDIS_URL)  # PAGETRAIL_TEST_DATABASE_URL, PAGETRAIL_TEST_REDIS_URL


@contextlib.contextmanager
def services(database_url: str, redis_url: str, s3_log: Path | None = None):
    """Yields the variables that put the cluster and this process on the production profile; `s3_log` keeps
    moto's request log (bench.per_job counts the requests there)."""
    fresh_database(database_url)
    log = open(s3_log, "w") if s3_log else None  # noqa: SIM115  (closed with the server)
    server, endpoint = start_s3(log or subprocess.DEVNULL)
    try:
        env = production_env(endpoint)
        yield {
            **{key: env[key] for key in SHARED},
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "PAGETRAIL_QUEUE_NAME": f"bench-{uuid.uuid4().hex[:8]}",
            "PAGETRAIL_MANIFEST_KEY": uuid.uuid4().hex,
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
        if log:
            log.close()


def fresh_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def create_buckets() -> None:
    """The buckets an operator creates in real life, on the loopback server (after django.setup)."""
    import boto3
    from django.conf import settings

    for alias in ("inputs", "outputs"):
        options = settings.STORAGES[alias]["OPTIONS"]
        s3 = boto3.client("s3", endpoint_url=options["endpoint_url"], region_name=options["region_name"])
        s3.create_bucket(Bucket=options["bucket_name"])


class S3Requests:
    """Counts the S3 requests this thread's stores send (by operation), through botocore's own events."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.last: Counter = Counter()
        from django.core.files.storage import storages

        for alias in ("inputs", "outputs"):
            connection = getattr(storages[alias], "connection", None)
            if connection is not None:
                connection.meta.client.meta.events.register("before-send.s3", self._count)

    def _count(self, request, **kwargs) -> None:
        self.counts[kwargs.get("event_name", "before-send.s3").rsplit(".", 1)[-1]] += 1

    def take(self) -> int:
        """The requests counted since the last call (by operation in `last`)."""
        self.last, self.counts = self.counts, Counter()
        return sum(self.last.values())
