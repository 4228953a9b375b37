"""The job around the extractor: what one one-image form costs in the jobs cluster, and where it goes.

    python -m bench.per_job [--jobs 30] [--runs 3] [--production] [--no-profile] [--summary FILE]

One profile per run of this command (`make bench` runs it embedded, and with --production again on
PostgreSQL, Redis and moto's S3 on loopback: bench/production.py). In a fresh data dir (and database), a real
`manage.py qcluster` with one worker; then --runs batches of --jobs distinct one-page, one-JPEG forms, each
submitted in this process as the API and the intake worker do it (stage, receive, decide), and waited for until
every job is terminal. Per batch: the CPU of every process of the cluster (its PDF child's apart) less an idle
cluster's over the same time (measured just before), per job; Redis commands on the broker's database (MONITOR,
less the idle rate); S3 requests (moto's request log, less the intake's own, counted in this process) by method
and bucket, and how often the input is read; intake CPU per file, the validation child's apart. The median of
the batches is reported. Then one more batch in a cluster started with PAGETRAIL_PROFILE_DIR (core/profiling.py):
statements, Redis commands and S3 requests per job counted from the profiles, and where each millisecond of the
cluster's CPU goes (under cProfile, which inflates every figure; the shares are what it tells). Never a pass or
fail on time.
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from core import processes

from . import job_floor, pipeline, runners
from .job_profile import profile_summary
from .tables import table

IDLE_SECONDS = 1.0  # the idle cluster measured before each batch, over the quieter of two windows this long
WARM_UP = 2  # jobs run before the first batch
TARGETS = {"production": 15.0, "embedded": 8.0}  # ms of cluster CPU a one-image job (issue 36, target 2)


def make_forms(out: Path, count: int, seed: int = 36) -> list[Path]:
    """`count` distinct one-page forms, one scanned JPEG each (as the corpus's, 1000-1275 px wide), made once."""
    from .corpus import FULL_PAGE, Builder
    from .pictures import jpeg, scan

    directory = out / f"one-image-forms-seed{seed}"
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = directory / f"form-{index:04d}.pdf"
        if not path.exists():
            rng = random.Random(seed * 100_003 + index)
            width = rng.randint(1000, 1275)
            image = jpeg(scan(rng, width, width * 11 // 8 - rng.randint(0, 60)), rng.randint(60, 85))
            builder = Builder()
            builder.page([(builder.xobject(image), image, FULL_PAGE)])
            builder.save(path.with_suffix(".tmp"), object_streams=False)
            path.with_suffix(".tmp").rename(path)
        paths.append(path)
    return paths


class RedisCommands:
    """Every command Redis runs on one database, from a MONITOR connection (other databases are other sessions')."""

    def __init__(self, url: str):
        import redis

        self.db = int(url.rsplit("/", 1)[-1] or 0)
        self.client = redis.Redis.from_url(url)
        self.commands: list[tuple[float, str]] = []
        self.monitor = self.client.monitor().__enter__()
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        try:
            for event in self.monitor.listen():
                if int(event.get("db", -1)) == self.db:
                    self.commands.append((time.monotonic(), event["command"].split(" ", 1)[0].upper()))
        except Exception:  # the connection closed under it: done
            pass

    def between(self, start: float, end: float) -> Counter:
        return Counter(name for at, name in list(self.commands) if start <= at < end)

    def close(self) -> None:
        self.monitor.connection.disconnect()


class S3Log:
    """moto's request log (werkzeug's access lines): requests by method and bucket since the last call."""

    LINE = re.compile(r'"(GET|PUT|HEAD|POST|DELETE) /([^/ ?]+)[^"]*" (\d{3})')
    COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours the lines of answers other than 200 (a HEAD's 404)

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def take(self) -> Counter:
        text = self.COLOUR.sub("", self.path.read_text(errors="replace"))
        new, self.offset = text[self.offset :], len(text)  # offsets in the uncoloured text: it only grows
        return Counter(f"{method} {bucket}" for method, bucket, _ in self.LINE.findall(new))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.per_job", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=30, help="one-image forms a batch")
    parser.add_argument("--runs", type=int, default=3, help="batches measured; the median is reported")
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the forms are kept")
    parser.add_argument("--no-profile", action="store_false", dest="profile", help="skip the profiled batch")
    parser.add_argument("--keep-profile", type=Path, help="copy the profiled batch's .prof files here (for pstats)")
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    parser.add_argument(
        "--production",
        action="store_true",
        help="PostgreSQL, Redis and S3 (moto on loopback): PAGETRAIL_TEST_DATABASE_URL's database (dropped and "
        "created anew) and PAGETRAIL_TEST_REDIS_URL",
    )
    options = parser.parse_args(argv)
    forms = make_forms(options.out, options.jobs * (options.runs + options.profile) + WARM_UP)
    if options.production:
        from .production import DEFAULTS, services

        data_dir = Path(tempfile.mkdtemp(prefix="pagetrail-per-job-"))
        with services(*DEFAULTS, s3_log=data_dir / "s3.log") as production:
            result = run(forms, options, data_dir, production)
    else:
        result = run(forms, options, Path(tempfile.mkdtemp(prefix="pagetrail-per-job-")))
    print_report(result)
    if options.summary:
        options.summary.write_text(json.dumps({k: v for k, v in result.items() if k != "batches"}))
    return 1 if result["failures"] else 0


def run(forms: list[Path], options, data_dir: Path, production: dict | None = None) -> dict:
    name = "production" if production else "embedded"
    result: dict[str, Any] = {"profile": name, "jobs": options.jobs, "failures": [], "load": [os.getloadavg()[0]]}
    redis = None
    try:
        env = pipeline.embedded_env(data_dir, 1, production or {}, {"PAGETRAIL_LOG_LEVEL": "INFO"})
        done = processes.manage(env, "migrate", "--noinput")
        if done.returncode:
            raise RuntimeError(f"manage.py migrate failed:\n{done.stdout}\n{done.stderr}")
        redis = RedisCommands(production["REDIS_URL"]) if production else None
        s3 = S3Log(data_dir / "s3.log") if production else None
        batches = []
        with running_cluster(env, data_dir / "qcluster.log") as cluster:
            # Not measured: a worker's first job builds what it keeps (its S3 clients, the signing key), once a process.
            result["failures"] += pipeline.wait_for_jobs(set(submit(forms[-WARM_UP:])["jobs"]), cluster)
            for number in range(options.runs):
                batch = forms[number * options.jobs : (number + 1) * options.jobs]
                batches.append(measure_batch(batch, cluster, redis, s3, result["failures"]))
            references = measure_references(cluster, options.jobs)
        result["batches"] = batches
        result["median"] = {key: statistics.median(b[key] for b in batches) for key in batches[0] if key != "by"}
        result["floor"] = {
            **references,
            "floor_ms": job_floor.floor(
                references["empty_task_ms"],
                result["median"]["pdf_child_cpu_ms"],
                references["statement_ms"],
                references["s3_request_ms"],
            ),
            "driver_floor_ms": job_floor.floor(
                references["empty_task_ms"],
                result["median"]["pdf_child_cpu_ms"],
                references["driver_statement_ms"],
                references["s3_request_ms"],
            ),
        }
        result["by"] = batches[len(batches) // 2]["by"]
        if options.profile:
            profile_dir = data_dir / "profile"
            batch = forms[options.runs * options.jobs : -WARM_UP]
            with running_cluster({**env, "PAGETRAIL_PROFILE_DIR": str(profile_dir)}, data_dir / "q2.log") as cluster:
                measure_batch(batch, cluster, None, None, result["failures"])
            result["profile_table"] = profile_summary(profile_dir, len(batch))
            if options.keep_profile:
                shutil.copytree(profile_dir, options.keep_profile, dirs_exist_ok=True)
        result["load"].append(os.getloadavg()[0])
    finally:
        if redis:
            redis.close()
        pipeline.cleanup(data_dir)
    return result


class running_cluster:
    """A `qcluster` with one worker, ready for work; stopped (with everything it started) on leaving."""

    def __init__(self, env: dict, log: Path):
        self.env, self.log = env, log

    def __enter__(self) -> subprocess.Popen:
        self.cluster = pipeline.start_cluster(self.env, self.log)
        pipeline.wait_until_ready(self.cluster, self.log, 1)
        return self.cluster

    def __exit__(self, *exc) -> None:
        processes.stop(self.cluster, pipeline.STOP_GRACE_SECONDS)


def cluster_cpu(session: int) -> tuple[float, float]:
    """CPU seconds of the cluster's Python processes, and of its PDF children, now."""
    python = children = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            cpu = runners.process_cpu(int(entry.name))
            if b"extraction.pdf" in (entry / "cmdline").read_bytes():
                children += cpu
            else:
                python += cpu
        except (ProcessLookupError, FileNotFoundError):
            pass
    return python, children


def idle_cluster(cluster, s3: S3Log | None = None) -> tuple[float, float, float, float, float]:
    """The idle cluster's CPU share over the quieter of two windows (a scheduled task, the reconciler's, may run in
    the other); then the last window's start, its end, and the cluster's CPU at its end (Python, PDF child)."""
    rates = []
    for _ in range(2):
        idle_start, idle_cpu = time.monotonic(), sum(cluster_cpu(cluster.pid))
        if s3:
            s3.take()
        time.sleep(IDLE_SECONDS)
        start, (python, child) = time.monotonic(), cluster_cpu(cluster.pid)
        rates.append((python + child - idle_cpu) / (start - idle_start))
    return min(rates), idle_start, start, python, child


def measure_references(cluster, count: int) -> dict:
    """What the engines cost by themselves in this run (bench/job_floor.py): an empty task through this cluster,
    one statement and one S3 request in this process."""
    from extraction.models import Job

    idle_rate = idle_cluster(cluster)[0]
    job = Job.objects.select_related("bundle").filter(status=Job.Status.COMPLETED).latest("pk")
    return {
        "empty_task_ms": job_floor.empty_task_cpu_ms(cluster, count, idle_rate, cluster_cpu),
        "statement_ms": job_floor.statement_cpu_ms(job.pk),
        "driver_statement_ms": job_floor.driver_statement_cpu_ms(job.pk),
        "s3_request_ms": job_floor.s3_request_cpu_ms(job.bundle.input_name),
    }


def measure_batch(forms: list[Path], cluster, redis: RedisCommands | None, s3: S3Log | None, failures: list) -> dict:
    """One batch: the idle cluster first, then every form submitted and its job waited for."""
    count = len(forms)
    idle_rate, idle_start, start, python, child = idle_cluster(cluster, s3)
    intake = submit(forms)
    failures += pipeline.wait_for_jobs(set(intake.pop("jobs")), cluster)
    end, (python_after, child_after) = time.monotonic(), cluster_cpu(cluster.pid)
    cluster_ms = 1000 * (python_after + child_after - python - child - idle_rate * (end - start)) / count
    figures = {
        "cluster_cpu_ms": cluster_ms,
        "pdf_child_cpu_ms": 1000 * (child_after - child) / count,
        "idle_cpu_share": idle_rate,
        **{key: value / count for key, value in intake.items() if key != "s3"},
        "by": {},
    }
    if redis:
        idle = redis.between(idle_start, start)
        busy = redis.between(start, end)
        idle_in_batch = sum(idle.values()) * (end - start) / (start - idle_start)
        figures["redis_ops"] = (sum(busy.values()) - idle_in_batch) / count
        figures["by"]["redis"] = {k: round(v / count, 2) for k, v in busy.most_common()}
        figures["by"]["redis_idle_per_s"] = {k: round(v / (start - idle_start), 2) for k, v in idle.most_common()}
    if s3:
        served = s3.take() - intake["s3"]
        figures["s3_requests"] = sum(served.values()) / count
        figures["input_reads"] = sum(v for k, v in served.items() if k.startswith("GET pagetrail-inputs")) / count
        figures["by"]["s3"] = {k: round(v / count, 2) for k, v in sorted(served.items())}
        figures["by"]["s3_intake"] = {k: round(v / count, 2) for k, v in sorted(intake["s3"].items())}
    return figures


def submit(forms: list[Path]) -> dict:
    """Each form through stage, receive and decide in this process; this process's CPU and its validation child's."""
    from django.conf import settings
    from django.db import connection

    from core.limits import configured_limits
    from extraction.intake import decision, staging
    from extraction.pdf import sandbox

    sandbox.warm_up(configured_limits())
    requests = _intake_s3(settings)
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    jobs, own, total = [], time.process_time(), runners.cpu_seconds()
    with connection.execute_wrapper(count):
        for path in forms:
            with open(path, "rb") as stream:
                staged = staging.stage(stream, filename=path.name, submitted_by="bench")
            submission = staging.receive(staged, filename=path.name, submitted_by="bench", queued=False)
            result = decision.result_of(decision.decide_here(submission))
            jobs.append(result.job_id)
    own, total = time.process_time() - own, runners.cpu_seconds() - total
    return {
        "jobs": jobs,
        "intake_cpu_ms": 1000 * total,
        "intake_beyond_validation_ms": 1000 * own,
        "intake_statements": statements,
        "s3": requests(),
    }


def _intake_s3(settings):
    """A callable giving the S3 requests this process sent since (method and bucket, as moto's log says them)."""
    if not settings.STORAGES["inputs"]["BACKEND"].endswith("S3Storage"):
        return Counter
    from .production import S3Requests

    counter = S3Requests()
    methods = {"HeadObject": "HEAD", "PutObject": "PUT", "GetObject": "GET", "CreateMultipartUpload": "POST"}

    def taken() -> Counter:
        counter.take()
        bucket = settings.STORAGES["inputs"]["OPTIONS"]["bucket_name"]
        return Counter({f"{methods.get(op, op)} {bucket}": n for op, n in counter.last.items()})

    return taken


def print_report(result: dict) -> None:
    name, median, jobs = result["profile"], result["median"], result["jobs"]
    print(
        f"\n### A one-image form's job in the cluster, {name} profile ({len(result['batches'])} batches of {jobs} "
        f"jobs, one worker; median of the batches; load average {result['load'][0]:.1f} → {result['load'][-1]:.1f} "
        f"on {os.cpu_count()} CPUs)\n"
    )
    rows = [
        ["cluster CPU a job, less an idle cluster (ms)", f"{median['cluster_cpu_ms']:.2f}", f"≤ {TARGETS[name]:g}"],
        ["of which the PDF child (the extractor)", f"{median['pdf_child_cpu_ms']:.2f}", ""],
        ["an idle cluster (CPU share)", f"{median['idle_cpu_share']:.3f}", "about 0.03" * (name == "embedded")],
        ["intake CPU a file (this process and its validation child, ms)", f"{median['intake_cpu_ms']:.2f}", ""],
        [
            "intake CPU a file beyond validation (ms)",
            f"{median['intake_beyond_validation_ms']:.2f}",
            "≤ 5" * (name == "production"),
        ],
        ["intake statements a file", f"{median['intake_statements']:.1f}", ""],
    ]
    if "redis_ops" in median:
        rows.append(["Redis commands a job (less the idle cluster's)", f"{median['redis_ops']:.1f}", ""])
        rows.append(["S3 requests a job, from the cluster", f"{median['s3_requests']:.2f}", "assets + 1 = 2"])
        rows.append(["input reads a job (GET on the input bucket)", f"{median['input_reads']:.2f}", "1"])
    if "profile_table" in result:
        counts = result["profile_table"]["counts"]
        rows.append(
            [
                "SQL statements a job, in the cluster (profiled batch)",
                f"{counts['statements']:.1f}",
                "≤ 10" * (name == "production"),
            ]
        )
    rows += floor_rows(result["floor"], name)
    table(["per job", "measured", "target"], rows)
    print("\ncluster CPU a job, each batch: " + ", ".join(f"{b['cluster_cpu_ms']:.2f} ms" for b in result["batches"]))
    for key, label in (
        ("redis", "Redis commands a job"),
        ("redis_idle_per_s", "an idle cluster's Redis commands a second"),
        ("s3", "the cluster's S3 requests a job"),
        ("s3_intake", "intake's S3 requests a file"),
    ):
        if key in result["by"]:
            print(f"\n{label}: " + ", ".join(f"{k} {v}" for k, v in result["by"][key].items()))
    if "profile_table" in result:
        from .job_profile import print_profile

        print_profile(result["profile_table"], name)
    if result["failures"]:
        print("\nchecks: FAILED\n  " + "\n  ".join(result["failures"]))


def floor_rows(floor: dict, name: str) -> list[list[str]]:
    """The engines' own costs measured in this run, and the floor they set at the issue's counts."""
    rows = [
        [
            "reference: a task that does nothing, in the same cluster (ms of cluster CPU)",
            f"{floor['empty_task_ms']:.2f}",
            "",
        ],
        ["reference: one SQL statement through the ORM (ms of CPU)", f"{floor['statement_ms']:.2f}", ""],
        [
            "reference: the same statement through the database driver alone (ms of CPU)",
            f"{floor['driver_statement_ms']:.2f}",
            "",
        ],
    ]
    if floor["s3_request_ms"] is not None:
        rows.append(["reference: one S3 request through botocore (ms of CPU)", f"{floor['s3_request_ms']:.2f}", ""])
    counts = f"{job_floor.ISSUE_STATEMENTS} statements" + (
        f", {job_floor.ISSUE_S3_REQUESTS} S3 requests" if floor["s3_request_ms"] is not None else ""
    )
    rows.append(
        [
            f"floor at the issue's counts: the empty task, the extractor, {counts}, and nothing else (ms)",
            f"{floor['floor_ms']:.2f}",
            f"≤ {TARGETS[name]:g}",
        ]
    )
    rows.append(
        ["the same floor with the statements through the driver alone (ms)", f"{floor['driver_floor_ms']:.2f}", ""]
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
