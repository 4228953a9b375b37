"""What the engines a job runs on cost by themselves, measured in bench.per_job's run: the floor under target 2.

A job is a django-q2 task, some SQL statements through Django's ORM, some S3 requests through botocore and the
extractor's PDF child. Each has a cost of its own that no change to Pagetrail can remove, so the run measures
them beside the jobs, on the same machine, database, broker and S3 server:

- **a task that does nothing** (`os.mkdir` of a directory of its own, which tells the benchmark it ran) through
  the same cluster and broker: the cluster CPU of a task, less the idle cluster's, as a job's is taken;
- **one statement**: a job's row read by its key (with its bundle, as `run_job` reads it) and a guarded
  UPDATE of it that changes nothing, in this process, averaged; and the same two written out in SQL through the
  database driver alone (what is left without the ORM);
- **one S3 request** (production): a HEAD, a GetObject of a stored input and a conditional PutObject of as
  many bytes, through the storages' own boto3 client, averaged.

The floor at the issue's own counts is then the empty task, the extractor as measured, and the statements and
S3 requests the target allows (10, and assets + 1 with the input read once) at these costs: what a job would
cost if it did nothing else at all. Never a pass or fail.
"""

import os
import statistics
import tempfile
import time
from pathlib import Path

from core import broker

from . import runners

REPEATS = 50  # statements and S3 requests timed, each kind (the median of 5 rounds of REPEATS / 5)
# The issue's own counts for a one-image job on production (issue 36, target 2): 10 statements, S3 requests =
# assets + 1 = 2 (the asset's PUT and the input's one read; the manifest's PUT and the store witness's marker are
# beyond it). The embedded profile has no S3 and no statement target: its floor counts the statements the same.
ISSUE_STATEMENTS = 10
ISSUE_S3_REQUESTS = 2


def empty_task_cpu_ms(cluster, count: int, idle_rate: float, cluster_cpu) -> float:
    """Cluster CPU a task of `count` tasks that do nothing, less the idle cluster's over the same time. Not
    bench.pipeline.queue_alone's tasks: those save their results (a statement more, which a job's task does not
    make) and are timed on the wall clock."""
    marks = Path(tempfile.mkdtemp(prefix="pagetrail-empty-tasks-"))
    try:
        start, before = time.monotonic(), sum(cluster_cpu(cluster.pid))
        for number in range(count):
            # os.mkdir: one system call, and the directory says the task ran (successes are not saved).
            broker.enqueue("os.mkdir", str(marks / str(number)))
        deadline = time.monotonic() + 60
        while len(os.listdir(marks)) < count and time.monotonic() < deadline and cluster.poll() is None:
            time.sleep(0.01)
        end, after = time.monotonic(), sum(cluster_cpu(cluster.pid))
        if len(os.listdir(marks)) < count:
            raise RuntimeError(f"only {len(os.listdir(marks))} of {count} empty tasks ran")
        return 1000 * (after - before - idle_rate * (end - start)) / count
    finally:
        for mark in marks.iterdir():
            mark.rmdir()
        marks.rmdir()


def statement_cpu_ms(job_id: int) -> float:
    """This process's CPU for one statement through the ORM: the median of rounds of a read and a guarded
    UPDATE that changes nothing (a completed job stays completed)."""
    from extraction.models import Job

    def one_round() -> None:
        for _ in range(REPEATS // 10):
            Job.objects.select_related("bundle").get(pk=job_id)
            Job.objects.filter(pk=job_id, status=Job.Status.COMPLETED).update(status=Job.Status.COMPLETED)

    return _median_ms(one_round, 2 * (REPEATS // 10))


def driver_statement_cpu_ms(job_id: int) -> float:
    """The same two statements written out in SQL and sent through the database driver alone: what the ORM's
    building of a statement and of its model objects costs, by difference."""
    from django.db import connection

    from extraction.models import Bundle, Job

    read = (
        f"SELECT * FROM {Job._meta.db_table} JOIN {Bundle._meta.db_table} "
        f"ON {Bundle._meta.db_table}.id = {Job._meta.db_table}.bundle_id WHERE {Job._meta.db_table}.id = %s"
    )
    update = f"UPDATE {Job._meta.db_table} SET status = %s WHERE id = %s AND status = %s"

    def one_round() -> None:
        with connection.cursor() as cursor:
            for _ in range(REPEATS // 10):
                cursor.execute(read, [job_id])
                cursor.fetchone()
                cursor.execute(update, [Job.Status.COMPLETED, job_id, Job.Status.COMPLETED])

    return _median_ms(one_round, 2 * (REPEATS // 10))


def s3_request_cpu_ms(input_name: str) -> float | None:
    """This process's CPU for one S3 request through the storages' client (None without S3): the median of rounds
    of a HEAD and a GetObject of a stored input, and a conditional PutObject of as many bytes to a new name."""
    from core import stores

    inputs, outputs = stores.inputs(), stores.outputs()
    if not (stores.is_s3(inputs) and stores.is_s3(outputs)):
        return None
    client = inputs.connection.meta.client
    key = inputs._normalize_name(input_name)
    body = client.get_object(Bucket=inputs.bucket_name, Key=key)["Body"].read()
    counter = iter(range(10**6))

    def one_round() -> None:
        for _ in range(REPEATS // 15):
            client.head_object(Bucket=inputs.bucket_name, Key=key)
            client.get_object(Bucket=inputs.bucket_name, Key=key)["Body"].read()
            client.put_object(
                Bucket=outputs.bucket_name,
                Key=outputs._normalize_name(f"bench-floor/{next(counter)}"),
                Body=body,
                IfNoneMatch="*",
                **outputs._get_write_parameters("bench-floor/x"),
            )

    return _median_ms(one_round, 3 * (REPEATS // 15))


def _median_ms(one_round, calls: int) -> float:
    one_round()  # warm: connections open, botocore's models loaded
    times = []
    for _ in range(5):
        start = runners.cpu_seconds()
        one_round()
        times.append(1000 * (runners.cpu_seconds() - start) / calls)
    return statistics.median(times)


def floor(empty_task_ms: float, extractor_ms: float, statement_ms: float, s3_ms: float | None) -> float:
    """A one-image job at the issue's own counts, doing nothing else: ms of cluster CPU."""
    s3 = ISSUE_S3_REQUESTS * s3_ms if s3_ms is not None else 0.0
    return empty_task_ms + extractor_ms + ISSUE_STATEMENTS * statement_ms + s3
