"""Pagetrail's own processes started from Python: a `manage.py` command, and a `qcluster` in a session of its own
(so that its workers and their PDF children can all be signalled), for the evaluation harness, the benchmarks and
the end-to-end tests."""

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
# What makes a deployment the production profile: a scratch deployment never inherits them.
PRODUCTION_VARS = ("DATABASE_URL", "REDIS_URL", "PAGETRAIL_INPUT_BUCKET", "PAGETRAIL_OUTPUT_BUCKET")


def embedded_env(data_dir: Path, **env: object) -> dict[str, str]:
    """This process's environment for an embedded deployment in `data_dir`, with `env` on top."""
    inherited = {k: v for k, v in os.environ.items() if k not in PRODUCTION_VARS}
    return {**inherited, "PAGETRAIL_DATA_DIR": str(data_dir), **{k: str(v) for k, v in env.items()}}


def manage(env: dict[str, str], *args: object, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """`manage.py <args>` run to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "manage.py", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_qcluster(env: dict[str, str], output: IO[str] | int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """`manage.py qcluster` in a session of its own (its process group id is its pid)."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(cluster: subprocess.Popen[bytes], grace: float) -> str:
    """SIGTERM (the cluster finishes the task in hand), then SIGKILL to its whole process group after `grace`
    seconds, and to whatever of the group outlived it: no process is left behind. Says how it ended."""
    how = "already exited"
    if cluster.poll() is None:
        cluster.send_signal(signal.SIGTERM)
        try:
            cluster.wait(grace)
            how = "stopped by SIGTERM"
        except subprocess.TimeoutExpired:
            how = f"still running {grace} s after SIGTERM: SIGKILLed"
    try:
        os.killpg(cluster.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    cluster.wait()
    return how
