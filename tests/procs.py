"""Real processes for end-to-end tests: `manage.py` commands and `qcluster` workers on a data dir of their own."""

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from core import processes
from tests.waiting import wait_until


class Portal:
    """One deployment of Pagetrail (embedded profile) in `data_dir`, driven through its commands."""

    def __init__(self, data_dir: Path, **env):
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        # The tests' webhook receivers listen on loopback, which deliveries otherwise refuse.
        env = {"PAGETRAIL_WEBHOOK_ALLOW_PRIVATE": "true", **env}
        self.env = processes.embedded_env(
            data_dir, DJANGO_SETTINGS_MODULE="portal.settings", PYTHONUNBUFFERED="1", **env
        )
        self.workers: list[subprocess.Popen] = []

    def manage(self, *args, check=True, timeout=120) -> subprocess.CompletedProcess:
        done = processes.manage(self.env, *args, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}")
        return done

    def manage_json(self, *args, check=True, timeout=120):
        return json.loads(self.manage(*args, "--json", check=check, timeout=timeout).stdout)

    def start_worker(self, queue: str = "", **env: str) -> subprocess.Popen:
        """A `qcluster`; `queue="pagetrail-previews"` (or `PAGETRAIL_CLUSTER="previews"`) starts the one for page
        previews. Its log is `worker_log(n)`."""
        log = open(self.worker_log(len(self.workers)), "w")
        env = {**self.env, **({"Q_CLUSTER_NAME": queue} if queue else {}), **env}
        proc = processes.start_qcluster(env, log)
        self.workers.append(proc)
        return proc

    def worker_log(self, n: int) -> Path:
        return self.data_dir / f"worker-{n}.log"

    def kill_worker(self, proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
        """Kill the whole cluster: sentinel, worker processes and any PDF child they started."""
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                self.kill_worker(proc)

    def query(self, sql: str, *params):
        """Read the database directly (the SQLite file), without starting Django."""
        with sqlite3.connect(self.data_dir / "pagetrail.sqlite3", timeout=30) as db:
            return db.execute(sql, params).fetchall()

    def wait_for(self, sql: str, *params, timeout=120.0, interval=0.02):
        """The rows of `sql` once its first value is true."""
        return wait_until(
            lambda: (found := self.query(sql, *params)) and found[0][0] and found, timeout, f"{sql} {params}", interval
        )

    def files_under(self, *parts) -> list[Path]:
        root = self.data_dir.joinpath(*parts)
        return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@contextlib.contextmanager
def profile_env(name: str) -> Iterator[dict[str, str]]:
    """The environment a deployment of its own needs on this run's profile: nothing more on the embedded one (its
    data dir is everything); on the production one a PostgreSQL database of its own (dropped afterwards), this run's
    Redis and buckets under a queue name and prefixes of its own, and the secrets every host shares."""
    from django.conf import settings

    if not settings.REDIS_URL:
        yield {}
        return
    import psycopg

    run = f"{name}_{uuid.uuid4().hex[:8]}"
    base = settings.DATABASES["default"]
    admin_url = f"postgresql://{base['USER']}@{base['HOST']}:{base['PORT']}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "pagetrail_{run}"')
    try:
        yield {
            "DATABASE_URL": f"postgres://{base['USER']}@{base['HOST']}:{base['PORT']}/pagetrail_{run}",
            "REDIS_URL": settings.REDIS_URL,
            "PAGETRAIL_QUEUE_NAME": run,
            "PAGETRAIL_INPUT_BUCKET": settings.STORAGES["inputs"]["OPTIONS"]["bucket_name"],
            "PAGETRAIL_OUTPUT_BUCKET": settings.STORAGES["outputs"]["OPTIONS"]["bucket_name"],
            "PAGETRAIL_INPUT_PREFIX": f"{run}/inputs",
            "PAGETRAIL_OUTPUT_PREFIX": f"{run}/outputs",
            "SECRET_KEY": uuid.uuid4().hex * 2,  # django-q2 signs tasks with it: the web server's and workers' alike
            "PAGETRAIL_SIGNING_KEY": settings.PAGETRAIL_SIGNING_KEY,
        }
    finally:
        with psycopg.connect(admin_url, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "pagetrail_{run}" WITH (FORCE)')
