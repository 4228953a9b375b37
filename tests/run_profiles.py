"""`make test`: the suite on the embedded profile, then on the production profile.

The production profile needs PostgreSQL and Redis (this script checks that they answer) and an
S3-compatible server (this script starts moto's standalone server on loopback). On a machine
without PostgreSQL or Redis the production run is skipped with the reason; with CI=true it fails.

    python -m tests.run_profiles [pytest args...]
"""

import base64
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get("PAGETRAIL_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pagetrail")
REDIS_URL = os.environ.get("PAGETRAIL_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PRODUCTION_VARS = (
    "DATABASE_URL",
    "REDIS_URL",
    "PAGETRAIL_INPUT_BUCKET",
    "PAGETRAIL_OUTPUT_BUCKET",
    "AWS_S3_ENDPOINT_URL",
)


def pytest(env: dict, args: list[str]) -> int:
    return subprocess.call([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env)


def missing_services() -> list[str]:
    problems = []
    try:
        import psycopg

        psycopg.connect(DATABASE_URL.rsplit("/", 1)[0] + "/postgres", connect_timeout=3).close()
    except Exception as exc:
        problems.append(f"PostgreSQL does not answer at {DATABASE_URL} ({type(exc).__name__})")
    try:
        import redis

        redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as exc:
        problems.append(f"Redis does not answer at {REDIS_URL} ({type(exc).__name__})")
    return problems


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_s3(log: IO[str] | int = subprocess.DEVNULL) -> tuple[subprocess.Popen, str]:
    """moto's standalone S3 server on a free loopback port, up before we return; `log` takes its request log."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the S3-compatible test server (moto) did not start")


def production_env(endpoint: str) -> dict:
    run = uuid.uuid4().hex[:8]
    return {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        "REDIS_URL": REDIS_URL,
        "PAGETRAIL_INPUT_BUCKET": f"pagetrail-inputs-{run}",
        "PAGETRAIL_OUTPUT_BUCKET": f"pagetrail-outputs-{run}",
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_S3_REGION_NAME": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        # what every host of a shared deployment must be given alike (settings refuse to start without)
        "SECRET_KEY": secrets.token_urlsafe(48),
        "PAGETRAIL_SIGNING_KEY": base64.b64encode(os.urandom(32)).decode(),
        "PAGETRAIL_MLDSA_SIGNING_KEY": base64.b64encode(os.urandom(32)).decode(),
    }


def main(args: list[str]) -> int:
    embedded = {k: v for k, v in os.environ.items() if k not in PRODUCTION_VARS}
    print("== embedded profile: SQLite, ORM broker, file-system stores", flush=True)
    status = pytest(embedded, args)
    problems = missing_services()
    if problems:
        ci = os.environ.get("CI", "").lower() == "true"
        print(f"== production profile {'FAILED' if ci else 'skipped'}: " + "; ".join(problems), flush=True)
        return 1 if ci else status
    server, endpoint = start_s3()
    try:
        print(f"== production profile: PostgreSQL, Redis broker, S3 at {endpoint}", flush=True)
        production = pytest(production_env(endpoint), args)
        return status or production
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
