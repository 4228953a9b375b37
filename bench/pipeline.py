"""The whole pipeline against the extractor alone: submitted until every manifest is durable.

    python -m bench.pipeline [--scale 1] [--seed 1] [--out var/bench] [--workers 2] [--submitters 2] [--production]

On the embedded default (SQLite, the django-q2 ORM broker, file storage, the local extractor) in a
fresh data dir (tmpfs when there is one; removed at the end): `manage.py migrate`, a real `manage.py
qcluster` with PAGETRAIL_WORKERS=--workers, then every corpus file submitted in this process,
--submitters at a time (threads: upstream clients sending at once, each upload decided at once as by an
intake worker of its own), as the API and the intake worker do it (`staging.stage`, `staging.receive`,
then the intake worker's `decide` here in this process: validation in a warm PDF child, input
hard-linked into its store, Bundle + Job, enqueue on commit), and the database polled
until every job is terminal. "Durable" is the last `Job.manifest_durable_at` (stamped just before
each manifest's commit). The reference is the extractor alone over the same files with as many
threads as workers (`runners.timed(..., runners.pagetrail, workers, warm=True)`, as `python -m bench`
times it), run before the cluster starts and after it stops (a difference shows other work on the
machine). A second reference: as many django-q2 no-op tasks through the same cluster. And the CPU
the cluster spent, against the floor the design sets: every input is hashed at intake and again by
the worker, and each file is one task.

Also: intake per step, with its queries (stage and receive, what a web request does; decide, what the intake
worker does; `decide_here` reads the decision again for its caller only when another worker made it); per job,
the intake latency (`Submission.created_at` to `decided_at`, and to `Job.picked_up_at`), queue wait, extraction and
manifest write (Job timestamps); and the queries of `run_job`, and of the `complete_job` in it, for the
files with the fewest, the median and the most images (re-extracted here once the cluster has stopped),
which must not grow with the number of assets. Nothing is patched. Page previews go to their own queue
(settings.PAGETRAIL_PREVIEW_QUEUE), whose cluster this benchmark does not start. Exits 1 when a job did not
complete or has other than corpus.json's distinct_outputs assets; never on time.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, cast

from core import processes

from . import runners
from .corpus import make_corpus
from .tables import table

ROOT = Path(__file__).resolve().parent.parent
TMPFS = Path("/dev/shm")
# Variables that would take the processes off the embedded default or out of the fresh data dir, or
# (Q_CLUSTER_NAME) have the cluster serve the previews' queue instead of the jobs'.
NOT_EMBEDDED = (
    "DATABASE_URL",
    "REDIS_URL",
    "PAGETRAIL_INPUT_BUCKET",
    "PAGETRAIL_OUTPUT_BUCKET",
    "PAGETRAIL_DATA_DIR",
    "PAGETRAIL_TEMP_DIR",
    "PAGETRAIL_PROVIDER",
    "PAGETRAIL_WORKERS",
    "Q_CLUSTER_NAME",
)
POLL_SECONDS = 0.05
READY_SECONDS = 60  # for the cluster to start
STALL_SECONDS = 300  # no job finished for this long: stop waiting (a hang guard, not a timed assertion)
STOP_GRACE_SECONDS = 20  # SIGTERM, then SIGKILL to the cluster's process group
BULK_INSERTS = ('INSERT INTO "audit_asset"', 'INSERT INTO "audit_placement"')  # the evidence's bulk_create


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the corpus is kept")
    parser.add_argument("--workers", type=int, default=2, help="qcluster workers, and the reference's threads")
    parser.add_argument(
        "--submitters",
        type=int,
        default=2,
        help="uploads at once: that many upstream clients, each decided at once by an intake worker of its own",
    )
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    parser.add_argument(
        "--production",
        action="store_true",
        help="PostgreSQL, Redis and S3 (moto on loopback) instead of the embedded default: the database of "
        "PAGETRAIL_TEST_DATABASE_URL (dropped and created anew) and PAGETRAIL_TEST_REDIS_URL",
    )
    options = parser.parse_args(argv)
    if options.production:
        from .production import DEFAULTS, services

        with services(*DEFAULTS) as production:
            result = run(options.scale, options.seed, options.out, options.workers, production, options.submitters)
    else:
        result = run(options.scale, options.seed, options.out, options.workers, submitters=options.submitters)
    print_report(result)
    if options.summary:
        options.summary.write_text(json.dumps(summary(result)))
    return 1 if result["failures"] else 0


def summary(result: dict) -> dict:
    return {
        "workers": result["workers"],
        "profile": result["profile"],
        "s3_requests": [row.get("s3_requests") for row in (result["queries"][0], result["queries"][-1])],
        "pipeline_s": result["pipeline"]["seconds"],
        "extractor_s": statistics.mean(wall for wall, _ in result["extractor"]),
        "queue_alone_s": result["queue_alone"],
        "floor_s": design_floor(result),
        "queries": [result["queries"][0]["run_job"], result["queries"][-1]["run_job"]],
        "assets": [result["queries"][0]["assets"], result["queries"][-1]["assets"]],
        "queries_constant": not result["verdict"].startswith("NOT"),
        "failures": result["failures"],
    }


def run(
    scale: float = 1.0,
    seed: int = 1,
    out: Path = Path("var/bench"),
    workers: int = 2,
    production: dict | None = None,
    submitters: int = 2,
) -> dict:
    """Measure once; returns every figure print_report shows, and the failed checks. `production`: the
    variables of the production profile (bench/production.py), else the embedded default; `submitters`:
    uploads at once."""
    corpus = out / f"corpus-seed{seed}-scale{scale:g}"
    truth = make_corpus(corpus, scale, seed)
    files = [corpus / f["name"] for f in truth["files"]]
    for path in files:  # neither side may pay for reading the corpus from disk
        path.read_bytes()
    data_dir = Path(tempfile.mkdtemp(prefix="pagetrail-pipeline-", dir=TMPFS if TMPFS.is_dir() else None))
    result: dict[str, Any] = {
        "truth": truth,
        "workers": workers,
        "profile": "production (PostgreSQL, Redis broker, S3 via moto on loopback)"
        if production
        else "embedded default (SQLite, ORM broker)",
        "load": [os.getloadavg()[0]],
        "overrides": sorted(
            f"{k}={v}"
            for k, v in os.environ.items()  # tunables are kept, and shown
            if k.startswith("PAGETRAIL_") and k not in NOT_EMBEDDED
        ),
    }
    try:
        env = embedded_env(data_dir, workers, production or {})
        result["hashing"] = hash_inputs(files)
        result["extractor"] = [extractor_alone(files, data_dir / "reference", workers)]
        done = processes.manage(env, "migrate", "--noinput")
        if done.returncode:
            raise RuntimeError(f"manage.py migrate failed:\n{done.stdout}\n{done.stderr}")
        cluster = start_cluster(env, data_dir / "qcluster.log")
        try:
            wait_until_ready(cluster, data_dir / "qcluster.log", workers)
            before = session_cpu(cluster.pid)
            result["queue_alone"] = queue_alone(len(files), cluster)
            middle = session_cpu(cluster.pid)
            result["pipeline"] = submit_and_wait(truth, corpus, cluster, submitters)
            result["cluster_cpu"] = {"queue_alone": middle - before, "pipeline": session_cpu(cluster.pid) - middle}
        finally:
            result["stop"] = stop_cluster(cluster)
        result["extractor"].append(extractor_alone(files, data_dir / "reference", workers))
        result["failures"] = result["pipeline"]["failures"]
        result["queries"] = per_job_queries(truth, bool(production))
        result["verdict"] = query_verdict(result["queries"])
        result["load"].append(os.getloadavg()[0])
    finally:
        cleanup(data_dir)
    return result


def embedded_env(data_dir: Path, workers: int, production: dict, extra: dict | None = None) -> dict:
    """The environment of the cluster and `manage.py migrate`; this process gets the same, quieter,
    and sets Django up with it (settings read the environment once). `production` (whose buckets are
    created) and `extra` go on top."""
    import django

    env = {
        **{k: v for k, v in os.environ.items() if k not in NOT_EMBEDDED},
        "PAGETRAIL_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PAGETRAIL_WORKERS": str(workers),
        "PYTHONUNBUFFERED": "1",
        "PAGETRAIL_LOG_LEVEL": "INFO",
        "PAGETRAIL_LOG_FORMAT": "plain",
        **production,
        **(extra or {}),
    }  # readiness is read from the log
    for name in NOT_EMBEDDED:
        os.environ.pop(name, None)
    os.environ.update({**env, "PAGETRAIL_LOG_LEVEL": "WARNING"})  # no "accepted ..." line per submission here
    django.setup()
    if production:
        from .production import create_buckets

        create_buckets()
    return env


def start_cluster(env: dict, log: Path) -> subprocess.Popen:
    """The plain `manage.py qcluster`, in a session of its own: its workers and their PDF children can
    all be signalled."""
    with open(log, "w") as out:
        return processes.start_qcluster(env, out)


def wait_until_ready(cluster: subprocess.Popen, log: Path, workers: int) -> None:
    """Until the cluster says it serves the jobs' queue, and every worker is ready for work."""
    from django.conf import settings

    # The Redis broker names its queue django_q:<name>:q, the ORM broker <name>.
    running = re.compile(rf"Q Cluster \S+ \[(?:django_q:)?{re.escape(settings.Q_CLUSTER['name'])}(?::q)?\] running")
    deadline = time.monotonic() + READY_SECONDS
    while not (running.search(text := log.read_text()) and text.count("ready for work") >= workers):
        if cluster.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"qcluster not running (exit code {cluster.returncode}):\n{text[-3000:]}")
        time.sleep(POLL_SECONDS)


def stop_cluster(cluster: subprocess.Popen) -> str:
    """core.processes.stop, timed: how long the cluster took to finish the task in hand."""
    start = time.monotonic()
    how = processes.stop(cluster, STOP_GRACE_SECONDS)
    return f"{how} in {time.monotonic() - start:.1f} s" if how == "stopped by SIGTERM" else how


def cleanup(data_dir: Path) -> None:
    """This process's connections and warm PDF children (validation, the reference), then the data dir."""
    from django.apps import apps

    if apps.ready:
        from django.db import connections

        from extraction.pdf import sandbox

        connections.close_all()
        sandbox.stop_idle_children()
    shutil.rmtree(data_dir, ignore_errors=True)


def extractor_alone(files: list[Path], out: Path, workers: int) -> tuple[float, float]:
    """The reference: wall seconds and CPU seconds (this process and its PDF children). Each
    thread's child is ready before the clock starts, as each worker's is (post_spawn). Its outputs
    are removed at once (tmpfs is memory)."""
    from extraction.pdf import sandbox

    run = runners.timed("extractor alone", files, out, runners.pagetrail, workers, warm=True)
    sandbox.stop_idle_children()
    shutil.rmtree(out, ignore_errors=True)
    return run.seconds, run.cpu_seconds


def hash_inputs(files: list[Path]) -> float:
    """sha256 of every input once, on one core, best of 3: intake does it as the bytes arrive, and the
    worker again before extracting (the stored input must still be the bytes of the correlation id)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for path in files:
            with open(path, "rb") as f:
                hashlib.file_digest(f, "sha256")
        best = min(best, time.perf_counter() - start)
    return best


def session_cpu(session: int) -> float:
    """CPU seconds of `session` (a cluster: sentinel, pusher, monitor, workers and their PDF children): of every
    live process in it, and of those they reaped (at 10,000 jobs django-q2 recycles its workers and the PDF
    children are replaced: their CPU would be lost with them)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == session:
                    total += runners.process_cpu(int(entry.name)) + runners.reaped_cpu(int(entry.name))
            except ProcessLookupError:
                pass
    return total


def queue_alone(count: int, cluster: subprocess.Popen) -> float:
    """The second reference: as many no-op tasks (`math.floor(1)`) as there are files, enqueued one at
    a time through the same broker and cluster, until every result is saved. What django-q2 on the
    embedded default costs before any of Pagetrail's work (a job's own task is over once its manifest
    commits; its result is saved after that, so this reference counts one step more than the pipeline)."""
    from django_q.models import Success
    from django_q.tasks import async_task

    group = f"bench-noop-{time.time_ns()}"
    began = time.perf_counter()
    for _ in range(count):
        async_task("math.floor", 1, group=group, save=True)
    while cluster.poll() is None and Success.objects.filter(group=group).count() < count:
        time.sleep(POLL_SECONDS / 5)
    if cluster.poll() is not None:
        raise RuntimeError(f"qcluster exited with {cluster.returncode} during the no-op tasks")
    return time.perf_counter() - began


def submit_and_wait(truth: dict, corpus: Path, cluster: subprocess.Popen, submitters: int = 1) -> dict:
    """Submit every file, `submitters` at a time (as that many upstream clients, whose uploads that many intake
    workers decide), timing each step and counting its queries, then wait until every job is terminal."""
    from core.limits import configured_limits
    from extraction.pdf import sandbox

    sandbox.warm_up(configured_limits(), count=submitters)  # as each intake worker's child is (post_spawn)
    pending, results, counts = list(reversed(truth["files"])), dict[str, Any](), list[tuple[Counter, Counter]]()
    start, began, cpu = datetime.now(UTC), time.perf_counter(), runners.cpu_seconds()
    threads = [threading.Thread(target=submitter, args=(corpus, pending, results, counts)) for _ in range(submitters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    submitted, intake_cpu = time.perf_counter() - began, runners.cpu_seconds() - cpu
    steps, queries = sum((c[0] for c in counts), Counter[str]()), sum((c[1] for c in counts), Counter[str]())
    accepted = {name: r.job_id for name, r in results.items() if r.accepted}
    failures = [
        f"{name}: refused at intake ({r.error_code}) {r.message}" for name, r in results.items() if not r.accepted
    ] + wait_for_jobs(set(accepted.values()), cluster)
    return {
        "start": start,
        "submitters": submitters,
        "submission_seconds": submitted,
        "intake_cpu": intake_cpu,
        "intake": steps,
        "intake_queries": queries,
        "accepted": accepted,
        **completed_jobs(truth, accepted, failures, start, submitted),
    }


def submitter(corpus: Path, pending: list, results: dict, counts: list) -> None:
    """One client and its intake worker: takes the next file until none is left (list.pop is atomic), then
    adds its seconds and queries per step to `counts`."""
    from django.db import connection

    from extraction.intake import decision, staging

    steps, queries, step = Counter[str](), Counter[str](), "stage"

    def count(execute, sql, params, many, context):
        queries[step] += 1
        return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(count):
            while pending:
                f = pending.pop()
                with open(corpus / f["name"], "rb") as fh:
                    step, t0 = "stage", time.perf_counter()
                    staged = staging.stage(fh, filename=f["name"], submitted_by="bench")
                    step, t1 = "receive", time.perf_counter()
                    submission = staging.receive(staged, filename=f["name"], submitted_by="bench", queued=False)
                    step, t2 = "decide", time.perf_counter()
                    decided = decision.decide_here(submission)
                    t3 = time.perf_counter()
                results[f["name"]] = decision.result_of(decided)
                # A Counter adds them up; typeshed has its counts int, and Counter adds seconds (floats) the same.
                steps.update(stage=t1 - t0, receive=t2 - t1, decide=t3 - t2)  # type: ignore[call-overload]
    finally:
        counts.append((steps, queries))
        connection.close()  # this thread's


def wait_for_jobs(jobs: set[int], cluster: subprocess.Popen) -> list[str]:
    """Poll until every job is terminal (or the cluster exited, or none finished for STALL_SECONDS)."""
    from extraction.models import Job

    done, last_change = -1, time.monotonic()
    while cluster.poll() is None:
        count = Job.objects.filter(pk__in=jobs, status__in=Job.TERMINAL).count()
        if count == len(jobs) or (count == done and time.monotonic() - last_change > STALL_SECONDS):
            break
        if count != done:
            done, last_change = count, time.monotonic()
        time.sleep(POLL_SECONDS)
    why = f" (qcluster exited with {cluster.returncode})" if cluster.poll() is not None else ""
    return [
        f"job {pk}: {status}{why}"
        for pk, status in Job.objects.filter(pk__in=jobs).values_list("pk", "status")
        if status != Job.Status.COMPLETED
    ]


def completed_jobs(
    truth: dict, accepted: dict[str, int], failures: list[str], start: datetime, submitted: float
) -> dict:
    """From the completed jobs: the last manifest durable, each step's durations (their timestamps), and
    the failures with a sentence per job whose asset count is not its file's distinct_outputs."""
    from django.db.models import Count

    from extraction.models import Job

    jobs = list(Job.objects.filter(status=Job.Status.COMPLETED).annotate(assets=Count("manifest__assets")))
    assets = {job.pk: job.assets for job in jobs}
    wrong = [
        f"{f['name']}: {assets[job]} assets, corpus.json says {f['distinct_outputs']}"
        for f in truth["files"]
        if (job := accepted.get(f["name"])) in assets and assets[job] != f["distinct_outputs"]
    ]
    after = [(cast(datetime, job.manifest_durable_at) - start).total_seconds() for job in jobs]  # completed: durable
    steps = {
        "queue wait (`enqueued_at` → `picked_up_at`)": ("enqueued_at", "picked_up_at"),
        "extraction (`submitted_at` → `provider_finished_at`)": ("submitted_at", "provider_finished_at"),
        "manifest write (`provider_finished_at` → `manifest_durable_at`)": (
            "provider_finished_at",
            "manifest_durable_at",
        ),
    }
    return {
        "failures": failures + wrong,
        "seconds": max(after, default=0.0),
        "completed": len(jobs),
        "durable_by_end_of_submission": sum(s <= submitted for s in after),
        "steps": {
            **intake_latency(jobs),
            **{
                name: [(getattr(j, end) - getattr(j, begin)).total_seconds() for j in jobs]
                for name, (begin, end) in steps.items()
            },
        },
    }


def intake_latency(jobs: list) -> dict[str, list[float]]:
    """Per job, from its submission's receipt: until the intake worker decided, and until a jobs' worker
    picked the job up (what an upstream client waits before its job runs)."""
    from extraction.models import Submission

    picked_up = {job.pk: job.picked_up_at for job in jobs}
    decided = Submission.objects.filter(job__in=picked_up, state=Submission.State.ACCEPTED, created=True)
    # Accepted: each has its job and its decision.
    rows = cast(list[tuple[int, datetime, datetime]], list(decided.values_list("job_id", "created_at", "decided_at")))
    return {
        "intake (`Submission.created_at` → `decided_at`)": [(d - c).total_seconds() for _, c, d in rows],
        "received → job picked up (`Submission.created_at` → `Job.picked_up_at`)": [
            (picked_up[job] - c).total_seconds() for job, c, _ in rows
        ],
    }


def per_job_queries(truth: dict, s3: bool = False) -> list[dict]:
    """`run_job` of a re-extraction (a new job of the bundle) in this process, for the files with the
    fewest, the median and the most images; the tasks these jobs enqueue stay in the queue. A query is
    complete_job's (the completion transaction and its evidence) when that function is on the call stack."""
    from django.db import connection

    from extraction.completion import complete_job
    from extraction.intake.rounds import request_reextraction
    from extraction.models import Bundle
    from extraction.runner import run_job

    def count(execute, sql, params, many, context):
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code is not complete_job.__code__:
            frame = frame.f_back
        queries.append((sql, frame is not None))
        return execute(sql, params, many, context)

    by_size = sorted(truth["files"], key=lambda f: (f["distinct_outputs"], f["name"]))
    rows = []
    if s3:
        from .production import S3Requests

        requests = S3Requests()
    for f in (by_size[0], by_size[len(by_size) // 2], by_size[-1]):
        job = request_reextraction(Bundle.objects.get(correlation_id=f["sha256"]))
        queries: list[tuple[str, bool]] = []
        if s3:
            requests.take()
        with connection.execute_wrapper(count):
            outcome = run_job(job.pk)
        inside = [sql for sql, in_complete_job in queries if in_complete_job]
        rows.append(
            {
                "name": f["name"],
                "assets": f["distinct_outputs"],
                "placements": f["placements"],
                "outcome": outcome,
                "run_job": len(queries),
                "complete_job": len(inside),
                "bulk_inserts": sum(sql.startswith(BULK_INSERTS) for sql in inside),
                **({"s3_requests": requests.take(), "s3_by_operation": dict(requests.last)} if s3 else {}),
            }
        )
    return rows


def query_verdict(rows: list[dict]) -> str:
    """ "constant"; or constant but for the statements Django splits a bulk INSERT into; or not constant."""
    from django.db import connection

    from audit.models import Asset, Placement

    few, many = rows[0], rows[-1]
    grew = {key: many[key] - few[key] for key in ("run_job", "complete_job", "bulk_inserts")}
    if not any(grew.values()):
        return "constant"
    difference = (
        f"complete_job {few['complete_job']} → {many['complete_job']}, run_job {few['run_job']} → {many['run_job']}"
    )
    if not grew["run_job"] == grew["complete_job"] == grew["bulk_inserts"]:
        return f"NOT constant: {difference}, of which {few['bulk_inserts']} → {many['bulk_inserts']} bulk INSERTs"
    asset_rows, placement_rows = (  # rows per INSERT statement of bulk_create on this database
        connection.ops.bulk_batch_size([f for f in model._meta.concrete_fields if not f.primary_key], [None] * 10**4)
        for model in (Asset, Placement)
    )
    return (
        f"bulk, constant but for INSERT batches ({difference}): Django splits a bulk_create into statements "
        f"of at most {asset_rows} asset rows and {placement_rows} placement rows on this database (SQLite, "
        f"{connection.features.max_query_params} parameters a statement), not one query per asset"
    )


def print_report(result: dict) -> None:
    truth, totals = result["truth"], result["truth"]["totals"]
    print(
        f"corpus: {totals['files']} PDFs, {totals['bytes'] / 1e6:.0f} MB, {totals['pages']} pages, "
        f"{totals['distinct_outputs']} images to write; seed {truth['seed']}, scale {truth['scale']:g}; "
        f"{os.cpu_count()} CPUs, load average {result['load'][0]:.2f} at start, {result['load'][-1]:.2f} at end; "
        f"{result['workers']} workers; {result['profile']}, in a fresh data dir"
        + (f"; overrides: {', '.join(result['overrides'])}" if result["overrides"] else "")
    )
    print(
        "page previews: queued for their own cluster (`Q_CLUSTER_NAME=pagetrail-previews manage.py qcluster`), "
        "which this benchmark does not run"
    )
    print_timings(result)
    print_steps(result["pipeline"])
    print_queries(result["queries"], result["verdict"])
    print(f"\nqcluster: {result['stop']}")
    failures = result["failures"]
    print("\nchecks: " + ("all passed" if not failures else "FAILED\n  " + "\n  ".join(failures)))


def print_timings(result: dict) -> None:
    pipeline, workers, ((before, cpu), (after, _)) = result["pipeline"], result["workers"], result["extractor"]
    reference, hashing, files = (before + after) / 2, result["hashing"], len(pipeline["accepted"])
    print("\n### Pipeline: submitted until every manifest is durable, against the extractor alone\n")
    table(
        ["run", "wall s", "× extractor alone"],
        [
            [
                f"extractor alone, {workers} threads (`runners.pagetrail`, outputs on tmpfs): before {before:.2f} s, "
                f"after {after:.2f} s; mean",
                f"{reference:.2f}",
                "1.00",
            ],
            ["hashing every input once (sha256, one core, best of 3)", f"{hashing:.2f}", f"{hashing / reference:.2f}"],
            [
                f"submission alone ({len(pipeline['accepted'])} files, {pipeline['submitters']} at a time; "
                f"{pipeline['durable_by_end_of_submission']} manifests durable by its end)",
                f"{pipeline['submission_seconds']:.2f}",
                f"{pipeline['submission_seconds'] / reference:.2f}",
            ],
            [
                f"django-q2 alone: {files} no-op tasks through the same cluster, enqueued one at a time, until every "
                "result is saved",
                f"{result['queue_alone']:.2f}",
                f"{result['queue_alone'] / reference:.2f}",
            ],
            [
                f"pipeline: first submission → last manifest durable ({workers} qcluster workers)",
                f"{pipeline['seconds']:.2f}",
                f"**{pipeline['seconds'] / reference:.2f}**",
            ],
        ],
    )
    print_cpu(result, reference, cpu, hashing, files)


def print_cpu(result: dict, reference: float, extractor_cpu: float, hashing: float, files: int) -> None:
    """Where the CPU went, and the floor that the work no pipeline of this design can skip sets."""
    cluster, cpus = result["cluster_cpu"], os.cpu_count() or 1
    queue, floor = cluster["queue_alone"], design_floor(result)
    print(
        f"\nCPU seconds: the extractor alone {extractor_cpu:.2f} (this process and its PDF children); the "
        f"cluster during the pipeline {cluster['pipeline']:.2f} ({1000 * cluster['pipeline'] / max(files, 1):.1f} ms "
        f"a job); the submitting process and its validation children during submission "
        f"{result['pipeline']['intake_cpu']:.2f} ({1000 * result['pipeline']['intake_cpu'] / max(files, 1):.1f} ms "
        f"a file); the cluster moving the no-op tasks {queue:.2f} ({1000 * queue / max(files, 1):.1f} ms a task)."
    )
    print(
        f"A floor no pipeline of this design can beat on {cpus} CPUs, even with the database, intake copy and "
        f"validation free: (extractor CPU + every input hashed twice + django-q2's own CPU for one task a "
        f"file) / {cpus} = {floor:.2f} s = {floor / reference:.2f}× the extractor alone; the pipeline took "
        f"{result['pipeline']['seconds'] / floor:.2f}× this floor (the goal: ≤ 2×)."
    )
    spent = cluster["pipeline"] + result["pipeline"]["intake_cpu"]
    print(
        f"The pipeline's own CPU (cluster + intake) {spent:.2f} s cannot take less than {spent / cpus:.2f} s on "
        f"{cpus} CPUs: {spent / cpus / floor:.2f}× the floor before any wait or other work on the machine."
    )


def design_floor(result: dict) -> float:
    """Seconds no pipeline of this design can beat: the extractor's CPU, every input hashed twice (at
    intake and by the worker) and django-q2's own CPU for one task a file, spread over every CPU."""
    extractor_cpu = result["extractor"][0][1]
    return (extractor_cpu + 2 * result["hashing"] + result["cluster_cpu"]["queue_alone"]) / (os.cpu_count() or 1)


def print_steps(pipeline: dict) -> None:
    steps, queries, files = pipeline["intake"], pipeline["intake_queries"], max(1, len(pipeline["accepted"]))
    total = sum(steps.values())
    print(
        f"\n### Intake in the submitting process ({files} files, {pipeline['submitters']} at a time; seconds "
        "summed over the submitters)\n"
    )
    table(
        ["step", "s", "ms per file", "share", "queries per file"],
        [
            [name, f"{steps[key]:.2f}", f"{1000 * steps[key] / files:.1f}", f"{steps[key] / total:.0%}"]
            + [f"{queries[key] / files:.1f}"]
            for key, name in [
                ("stage", "stage: copy into temp, hashing (the web request)"),
                ("receive", "receive: the pending submission row (the web request)"),
                (
                    "decide",
                    "decide: claim, `inspect_pdf` in the warm PDF child, store the input (a hard link), Bundle + "
                    "Job, commit, the job's task enqueued (the intake worker)",
                ),
            ]
        ]
        + [["in all", f"{total:.2f}", f"{1000 * total / files:.1f}", "100%", f"{sum(queries.values()) / files:.1f}"]],
    )
    print(f"\n### Per job, in the cluster ({pipeline['completed']} completed jobs)\n")
    table(
        ["step", "median s", "slowest s"],
        [
            [name, f"{statistics.median(values):.3f}", f"{max(values):.3f}"]
            for name, values in pipeline["steps"].items()
            if values
        ],
    )


def print_queries(rows: list[dict], verdict: str) -> None:
    print("\n### Queries of one job (`run_job` of a re-extraction in this process; fewest, median, most images)\n")
    s3 = "s3_requests" in rows[0]
    table(
        ["file", "assets", "placements", "run_job queries", "of which complete_job"] + ["S3 requests"] * s3,
        [
            [r["name"], r["assets"], r["placements"], r["run_job"], r["complete_job"]]
            + (
                [f"{r['s3_requests']} ({', '.join(f'{k} {v}' for k, v in sorted(r['s3_by_operation'].items()))})"]
                if s3
                else []
            )
            for r in rows
        ],
    )
    print(f"\nqueries per job: {verdict}")
    for r in rows:
        if r["outcome"] != "completed":
            print(f"  (run_job of {r['name']} ended {r['outcome']})")


if __name__ == "__main__":
    sys.exit(main())
