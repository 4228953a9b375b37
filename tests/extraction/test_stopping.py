"""A cluster told to stop (SIGTERM) exits on time and hands back what it held, on both profiles.

Each run TERMs a real `qcluster` mid-job (polling the Infrai simulator) or mid-validation (its PDF child inflating
a bomb), times its exit, and starts the next cluster, which must take the same job or submission at once: the
lease is five minutes, far longer than the test waits. Runs alternate between TERM to the master alone (what
Kubernetes sends) and to the whole process group (systemd's default, `make run`'s Ctrl-C). The exit times are
printed as a table, never asserted against a tight bound (docs/operations.md keeps the figures).

PAGETRAIL_STOP_RUNS sets the runs per scenario (the issue asks 20; on a busy machine pass 2).
"""

import os
import signal
import statistics
import time
from functools import partial

import pytest

from extraction.providers.simulator import Simulator
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.procs import Portal
from tests.test_scale import scale_database, shared_env  # noqa: F401  (scale_database is a fixture)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("PAGETRAIL_STOP_RUNS", "20"))
LEASE_SECONDS = 300
EXIT_DEADLINE = 60  # only so that a hung cluster fails the test instead of hanging it
KEY = "stop-test-key-" + "k" * 24


class Deployment(Portal):
    """A Portal whose database is SQLite (embedded) or the production profile's PostgreSQL."""

    def __init__(self, data_dir, database_url: str | None, **env):
        super().__init__(data_dir, **{**env, "PAGETRAIL_CLAIM_LEASE_SECONDS": LEASE_SECONDS})
        self.database_url = database_url

    def query(self, sql: str, *params):
        if not self.database_url:
            return super().query(sql, *params)
        import psycopg

        with psycopg.connect(self.database_url) as db:
            return db.execute(sql.replace("?", "%s"), params).fetchall()

    def one(self, sql: str, *params):
        return self.query(sql, *params)[0]


@pytest.fixture
def deployment(tmp_path, request):
    def make(**env):
        if PRODUCTION:
            url = request.getfixturevalue("scale_database")
            d = Deployment(tmp_path / "portal", url, **{**shared_env(url), **env})
        else:
            d = Deployment(tmp_path / "portal", None, **env)
        d.manage("migrate", "--noinput")
        made.append(d)
        return d

    made: list[Deployment] = []
    yield make
    for d in made:
        d.stop()


@pytest.fixture
def simulator():
    with Simulator("127.0.0.1", 0, KEY, "never_finishes") as running:
        yield running


def terminate(d: Deployment, cluster, run: int) -> float:
    """SIGTERM the master alone (even runs) or its whole process group (odd runs); seconds until it exited."""
    started = time.monotonic()
    (os.killpg if run % 2 else os.kill)(cluster.pid, signal.SIGTERM)
    try:
        cluster.wait(timeout=EXIT_DEADLINE)
    except Exception:
        d.kill_worker(cluster)
        raise AssertionError(f"run {run}: the cluster outlived SIGTERM by {EXIT_DEADLINE}s") from None
    return time.monotonic() - started


def more_than(seen: int, d: Deployment, sql: str, *params) -> int:
    """The count `sql` gives when it passed `seen`, else 0."""
    count = d.one(sql, *params)[0]
    return count if count > seen else 0


def leftovers(cluster) -> bool:
    """Whether any process of the cluster's group outlived it (the group is the cluster: start_new_session)."""
    try:
        os.killpg(cluster.pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_cluster_stops_mid_job_and_another_takes_the_job_at_once(deployment, simulator, tmp_path, capsys):
    d = deployment(
        PAGETRAIL_PROVIDER="infrai",
        INFRAI_BASE_URL=simulator.url,
        INFRAI_API_KEY=KEY,
        PAGETRAIL_POLL_BUDGET_SECONDS=3600,  # polls in place between backoffs: every TERM lands mid-job
        PAGETRAIL_BACKOFF_CAP_SECONDS=4,
    )
    [submitted] = d.manage_json("submit_bundle", "--here", pdfs.bundle(tmp_path))
    job = submitted["job_id"]
    polls = "select count(*) from extraction_attempt where job_id = ? and kind = 'poll'"
    cluster, seen, times = d.start_worker(), 0, []
    for run in range(RUNS):
        seen = wait_until(partial(more_than, seen, d, polls, job), timeout=EXIT_DEADLINE, what="no new poll")
        time.sleep(run % 3)  # in a backoff wait, or just after a poll
        times.append(terminate(d, cluster, run))
        assert not leftovers(cluster)
        assert d.one("select status, claim_token from extraction_job where id = ?", job) == ("running", None)
        cluster = d.start_worker()  # takes it from the queue, not after the lease

    wait_until(partial(more_than, seen, d, polls, job), timeout=EXIT_DEADLINE, what="the last cluster never polled")
    report(capsys, "mid-job", times)


def test_a_cluster_stops_mid_validation_and_another_takes_the_submission_at_once(deployment, tmp_path, capsys):
    d = deployment(PAGETRAIL_MAX_STREAM_BYTES=2**40)  # the bomb inflates for about a minute of CPU
    queue = d.env.get("PAGETRAIL_QUEUE_NAME", "pagetrail") + "-intake"
    [pending] = d.manage_json("submit_bundle", "--no-wait", pdfs.flate_bomb(tmp_path, mib=32768))
    submission = "select tries, claimed_until is null, state from extraction_intake_submission where id = ?"
    cluster, times = d.start_worker(queue), []
    for run in range(RUNS):
        wait_until(lambda: d.one(submission, pending["submission_id"])[0] == 1, timeout=EXIT_DEADLINE)
        time.sleep(1 + run % 2)  # the child is into the bomb
        times.append(terminate(d, cluster, run))
        assert not leftovers(cluster)
        # The try is undone and the claim released: the submission is any worker's at once, its one retry intact.
        assert d.one(submission, pending["submission_id"]) == (0, True, "pending")
        cluster = d.start_worker(queue)

    wait_until(lambda: d.one(submission, pending["submission_id"])[0] == 1, timeout=EXIT_DEADLINE)
    report(capsys, "mid-validation", times)


def profile() -> str:
    return "production" if PRODUCTION else "embedded"


def report(capsys, scenario: str, times: list[float]) -> None:
    with capsys.disabled():
        print(
            f"\n{scenario} ({profile()}), seconds from SIGTERM to exit over {len(times)} runs: "
            f"min {min(times):.2f}  median {statistics.median(times):.2f}  max {max(times):.2f}"
        )


@pytest.mark.parametrize("run", [0, 1], ids=["master", "group"])
def test_a_worker_stuck_in_a_provider_call_releases_the_job_at_the_grace_and_exits(deployment, tmp_path, capsys, run):
    """The first submit of a job hangs for 30 s at the provider: the worker cannot hand it back at a wait point, so
    at PAGETRAIL_STOP_GRACE_SECONDS it releases the claim, queues the job again and exits."""
    with Simulator("127.0.0.1", 0, KEY, "slow_accept", accept_delay_seconds=30) as slow:
        d = deployment(PAGETRAIL_PROVIDER="infrai", INFRAI_BASE_URL=slow.url, INFRAI_API_KEY=KEY)
        [submitted] = d.manage_json("submit_bundle", "--here", pdfs.bundle(tmp_path))
        submits = "select count(*) from extraction_attempt where job_id = ? and kind = 'submit'"
        cluster = d.start_worker()
        wait_until(partial(more_than, 0, d, submits, submitted["job_id"]), timeout=EXIT_DEADLINE, what="no submit")
        time.sleep(1)
        took = terminate(d, cluster, run)
        assert not leftovers(cluster)
        assert d.one("select claim_token from extraction_job where id = ?", submitted["job_id"]) == (None,)
        d.start_worker()

        wait_until(partial(more_than, 1, d, submits, submitted["job_id"]), timeout=EXIT_DEADLINE, what="not taken")
    report(capsys, "stuck in a provider call", [took])
