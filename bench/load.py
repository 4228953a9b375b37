"""Issue 36, target 3: throughput and tail latency under load, on the production profile.

    python -m bench.load [--forms 200] [--bundles 2] [--clients 8] [--workers 1] [--pages 240] [--out var/bench]
    python -m bench.load --forms 10000 --bundles 20      # the issue's scale: hours on 2 shared CPUs

`--forms` distinct one-page, one-JPEG forms and `--bundles` 240-page bundles, spread among them, are sent to
`POST /api/v1/bundles` by `--clients` threads (raw PDF bodies, an Idempotency-Key each, a refused or unanswered
request sent again under the same key) against gunicorn, with PostgreSQL, Redis and moto's S3 on loopback
(bench/production.py: the database of `--database-url` is dropped and created anew). Two worker hosts share them:
each a jobs cluster of `--workers` processes in a UTS namespace of its own, so each has its own host name (as
`Job.claimed_by` and the heartbeats record it); the first also runs gunicorn and the intake cluster (staged uploads
wait in the temp dir of the host that received them). Without the right to make a namespace the two sets of
clusters share this machine's name.

It prints jobs per second (first submission received to last manifest durable) and p50/p95 of queue wait
(received -> claimed), extraction (claimed -> provider finished) and manifest durability (provider finished ->
manifest durable), for forms and bundles apart, from the database's timestamps; then checks that every submission
has a job and a manifest, that no job is duplicated, and that `manage.py verify_manifests` finds nothing (exit 1
when a check fails; never on time).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from core import processes
from core.percentiles import percentile
from tests.run_profiles import free_port

from . import per_job, pipeline, runners
from .tables import table

HOSTS = ("pagetrail-load-a", "pagetrail-load-b")
STEPS = (
    ("queue wait", "received", "claimed"),
    ("of which intake", "received", "decided"),
    ("extraction", "claimed", "extracted"),
    ("manifest durability", "extracted", "durable"),
)
FORM_SEED = 36  # bench.per_job's forms: the first ones are made once for both
STALL_SECONDS = 300  # no submission decided and no job finished for this long: give up waiting
RETRY_STATUSES = {409, 429, 502, 503}  # the same key again: in progress, rate limited, a web worker restarting
NO_LIMIT = "1000000/m"  # one account sends everything: the API's rate limit is not what is measured


def main(argv: list[str] | None = None) -> int:
    from .production import DEFAULTS, services

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forms", type=int, default=200)
    parser.add_argument("--bundles", type=int, default=2)
    parser.add_argument("--pages", type=int, default=240, help="pages of each bundle")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1, help="jobs workers on each of the two hosts")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument(
        "--intake-workers", type=int, default=1, help="the intake cluster's workers (on the first host)"
    )
    parser.add_argument("--out", type=Path, default=Path("var/bench"))
    parser.add_argument("--database-url", default=DEFAULTS[0], help="dropped and created anew")
    parser.add_argument("--redis-url", default=DEFAULTS[1])
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    options = parser.parse_args(argv)
    files = make_files(options.out, options.forms, options.bundles, options.pages)
    with services(options.database_url, options.redis_url) as production:
        result = run(files, options, production)
    print_report(result)
    if options.summary:
        options.summary.write_text(json.dumps(summary(result)))
    return 1 if result["failures"] else 0


def summary(result: dict) -> dict:
    """What `python -m bench` shows of this run: jobs per second, each step's p95 a kind, the failures."""
    return {
        "files": dict(result["files"]),
        "jobs_per_second": jobs_per_second(result["rows"]),
        "p95": {f"{kind} {step}": p95 for kind, step, _, _, p95, _ in latency_rows(result["rows"])},
        "cpu_ms": cpu_per_job(result["cpu"], result["rows"]),
        "failures": result["failures"],
    }


def make_files(out: Path, forms: int, bundles: int, pages: int) -> list[tuple[str, Path]]:
    """(kind, path) in the order they are sent: the bundles spread evenly among the forms; made once."""
    from .corpus import legal

    files = [("form", path) for path in per_job.make_forms(out, forms, FORM_SEED)]
    directory = out / f"load-bundles-{pages}p"
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(bundles):
        path = directory / f"bundle-{index:02d}.pdf"
        if not path.exists():
            legal(random.Random(f"load/{index}"), pages).save(path.with_suffix(".tmp"), object_streams=True)
            path.with_suffix(".tmp").rename(path)
        files.insert((index + 1) * forms // (bundles + 1) + index, ("bundle", path))
    return files


def run(files: list[tuple[str, Path]], options, production: dict) -> dict:
    """Start the two hosts, send every file, wait, measure from the database, check; everything stopped after."""
    root = Path(tempfile.mkdtemp(prefix="pagetrail-load-", dir=pipeline.TMPFS if pipeline.TMPFS.is_dir() else None))
    started: list[subprocess.Popen] = []
    result: dict[str, Any] = {
        "load": [os.getloadavg()[0]],
        "options": vars(options),
        "files": Counter(k for k, _ in files),
    }
    try:
        extra = {"PAGETRAIL_API_RATE": NO_LIMIT, "PAGETRAIL_API_READ_RATE": NO_LIMIT}
        env = pipeline.embedded_env(root / HOSTS[0], options.workers, production, extra)
        for host in HOSTS:
            (root / host).mkdir(exist_ok=True)
        done = processes.manage(env, "migrate", "--noinput")
        if done.returncode:
            raise RuntimeError(f"manage.py migrate failed:\n{done.stdout}\n{done.stderr}")
        token, port, result["namespaces"] = start_hosts(root, env, options, started)
        before = role_cpu(started)
        start = time.monotonic()
        result["sent"] = send_all(files, port, token, options.clients)
        result["sent_seconds"] = time.monotonic() - start
        result["stalled"] = wait_for_all([s["submission"] for s in result["sent"] if "submission" in s])
        result["cpu"] = {role: seconds - before[role] for role, seconds in role_cpu(started).items()}
        result["rows"] = measured_rows(result["sent"])
        result["failures"] = checks(files, result["sent"], result["rows"], verify(env))
        result["load"].append(os.getloadavg()[0])
    finally:
        for proc in reversed(started):
            processes.stop(proc, pipeline.STOP_GRACE_SECONDS)
        pipeline.cleanup(root)
    return result


def start_hosts(root: Path, env: dict, options, started: list) -> tuple[str, int, bool]:
    """gunicorn, the intake cluster and a jobs cluster on the first host, a jobs cluster on the second; the
    service account's token, gunicorn's port and whether each host has a name of its own."""
    from extraction.accounts import ServiceAccount

    token = ServiceAccount.objects.create(name="load").issue_token()
    namespaces = os.geteuid() == 0 and shutil.which("unshare") is not None
    port = free_port()
    gunicorn = [str(Path(sys.executable).parent / "gunicorn"), "-c", "portal/gunicorn.conf.py"]
    web = [*gunicorn, "-b", f"127.0.0.1:{port}", "-w", str(options.web_workers), "portal.wsgi"]
    qcluster = [sys.executable, "manage.py", "qcluster"]
    for host in HOSTS:
        host_env = {**env, "PAGETRAIL_DATA_DIR": str(root / host)}
        jobs = on_host(host, qcluster, host_env, root / host / "jobs.log", namespaces)
        started.append(jobs)
        pipeline.wait_until_ready(jobs, root / host / "jobs.log", options.workers)
        if host == HOSTS[0]:
            intake_env = {
                **host_env,
                "PAGETRAIL_CLUSTER": "intake",
                "PAGETRAIL_INTAKE_WORKERS": str(options.intake_workers),
            }
            started.append(on_host(host, qcluster, intake_env, root / host / "intake.log", namespaces))
            wait_for_line(started[-1], root / host / "intake.log", "ready for work")
            started.append(on_host(host, web, host_env, root / host / "gunicorn.log", namespaces))
            wait_for_web(port, started[-1])
    return token, port, namespaces


def role_cpu(started: list[subprocess.Popen]) -> dict[str, float]:
    """CPU seconds of each role's live processes (a cluster's session: its workers and their PDF children)."""
    roles = ("jobs", "intake", "web", "jobs")  # the order start_hosts starts them in
    cpu: dict[str, float] = defaultdict(float)
    for role, proc in zip(roles, started, strict=True):
        cpu[role] += pipeline.session_cpu(proc.pid)
    cpu["S3 server"] = sum(runners.process_cpu(pid) for pid in moto_server())
    return cpu


def moto_server() -> list[int]:
    """The S3 server bench/production.py started: a child of this process."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return [int(pid) for pid in children if b"moto_server" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def on_host(host: str, command: list[str], env: dict, log: Path, namespaces: bool) -> subprocess.Popen:
    """`command` in a session of its own (so it and its children can be signalled), named `host` when it may have
    a UTS namespace of its own: unshare and sh exec it, so the pid is the command's."""
    prefix = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host] if namespaces else []
    with open(log, "w") as out:
        return subprocess.Popen(
            [*prefix, *command],
            cwd=processes.ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for_line(proc: subprocess.Popen, log: Path, text: str) -> None:
    """Until `text` is in the log (a cluster's start is not measured), or the process ended."""
    deadline = time.monotonic() + pipeline.READY_SECONDS
    while text not in (found := log.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{log.name}: {text!r} never came:\n{found[-3000:]}")
        time.sleep(pipeline.POLL_SECONDS)


def wait_for_web(port: int, web: subprocess.Popen) -> None:
    import requests

    deadline = time.monotonic() + pipeline.READY_SECONDS
    while time.monotonic() < deadline and web.poll() is None:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=(1, 5)).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise RuntimeError("gunicorn did not answer /healthz")


def send_all(files: list[tuple[str, Path]], port: int, token: str, clients: int) -> list[dict]:
    """Every file sent by `clients` threads, each with its own session; one dict a file, in order."""
    sent: list[dict] = [{"kind": kind, "name": path.name} for kind, path in files]
    pending = list(reversed(range(len(files))))
    lock = threading.Lock()

    def client() -> None:
        import requests

        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {token}"
            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.pop()
                sent[index].update(send_one(session, port, files[index][1], f"load-{index}"))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sent


def send_one(session, port: int, path: Path, key: str, tries: int = 20) -> dict:
    """One file under one Idempotency-Key, sent again under the same key while the answer says to wait."""
    import requests

    body, wait = path.read_bytes(), 0.2
    for attempt in range(1, tries + 1):
        try:
            response = session.post(
                f"http://127.0.0.1:{port}/api/v1/bundles",
                data=body,
                headers={"Content-Type": "application/pdf", "Idempotency-Key": key},
                timeout=(5, 120),
            )
        except requests.ConnectionError:
            response = None
        if response is not None and response.status_code in (200, 201, 202):
            return {"submission": response.json()["id"], "tries": attempt}
        if response is not None and response.status_code not in RETRY_STATUSES:
            return {"error": f"{response.status_code} {response.text[:200]}", "tries": attempt}
        time.sleep(wait)
        wait = min(wait * 2, 5.0)
    return {"error": "no answer", "tries": tries}


def wait_for_all(submissions: list[int], stall: float = STALL_SECONDS) -> bool:
    """Until every submission is decided and each accepted one's job is finished (its manifest durable, or
    failed); True when it gave up after `stall` seconds without progress."""
    from extraction.intake.submission import Submission
    from extraction.models import Job

    last, changed = (-1, -1), time.monotonic()
    while True:
        decided = Submission.objects.filter(pk__in=submissions).exclude(state=Submission.State.PENDING)
        jobs = Job.objects.filter(pk__in=decided.values("job"))
        unfinished = jobs.filter(manifest_durable_at__isnull=True).exclude(
            status__in=[Job.Status.FAILED, Job.Status.CANCELLED]
        )
        now = (decided.count(), jobs.count() - unfinished.count())
        if now[0] == len(submissions) and not unfinished.exists():
            return False
        if now != last:
            last, changed = now, time.monotonic()
        elif time.monotonic() - changed > stall:
            return True
        time.sleep(1.0)


def measured_rows(sent: list[dict]) -> list[dict]:
    """One row a sent file: its kind, submission, job and the four instants (datetimes, or None)."""
    from audit.models import Manifest
    from extraction.intake.submission import Submission

    ids = [s["submission"] for s in sent if "submission" in s]
    submissions = Submission.objects.select_related("job").in_bulk(ids)
    manifested = set(
        Manifest.objects.filter(job__in=[s.job_id for s in submissions.values()]).values_list("job", flat=True)
    )
    rows = []
    for item in sent:
        submission = submissions.get(item.get("submission", -1))
        job = submission.job if submission else None
        rows.append(
            {
                "kind": item["kind"],
                "state": submission.state if submission else "not sent",
                "job": job.pk if job else None,
                "host": job.claimed_by.rsplit(":", 1)[0] if job and job.claimed_by else "",
                "manifest": bool(job and job.pk in manifested),
                "received": submission.created_at if submission else None,
                "decided": submission and submission.decided_at,
                "claimed": job and job.picked_up_at,
                "extracted": job and job.provider_finished_at,
                "durable": job and job.manifest_durable_at,
            }
        )
    return rows


def verify(env: dict) -> dict:
    done = processes.manage(env, "verify_manifests", "--json")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"ok": False, "error": (done.stdout + done.stderr)[-2000:]}


def checks(files: list, sent: list[dict], rows: list[dict], verified: dict) -> list[str]:
    """What the run got wrong: lost, refused or duplicated submissions, missing manifests, findings."""
    from extraction.models import Job

    failures = [f"{s['name']}: {s['error']}" for s in sent if "error" in s]
    failures += [
        f"{s['name']}: submission {r['state']}" for s, r in zip(sent, rows, strict=True) if r["state"] != "accepted"
    ]
    failures += [
        f"{s['name']}: job {r['job']} has no manifest"
        for s, r in zip(sent, rows, strict=True)
        if r["job"] and not r["manifest"]
    ]
    jobs = [r["job"] for r in rows if r["job"]]
    if len(set(jobs)) != len(jobs) or Job.objects.count() != len(files):
        failures.append(f"{len(files)} files, {len(set(jobs))} jobs named, {Job.objects.count()} jobs in the database")
    if not verified.get("ok"):
        failures.append(f"verify_manifests: {verified.get('findings') or verified.get('error')}")
    return failures


def durations(rows: list[dict]) -> dict[str, dict[str, list[float]]]:
    """Seconds of each step, by kind then step, over the rows that have both ends."""
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for step, start, end in STEPS:
            if row.get(start) and row.get(end):
                found[row["kind"]][step].append((row[end] - row[start]).total_seconds())
    return found


def jobs_per_second(rows: list[dict]) -> float | None:
    """Finished jobs over first received to last manifest durable."""
    done = [r for r in rows if r.get("durable") and r.get("received")]
    if not done:
        return None
    span = (max(r["durable"] for r in done) - min(r["received"] for r in done)).total_seconds()
    return len(done) / span if span > 0 else None


def latency_rows(rows: list[dict]) -> list[list]:
    """The latency table: kind, step, n, p50, p95, slowest (seconds)."""
    table_rows = []
    for kind, steps in sorted(durations(rows).items(), key=lambda item: item[0] != "form"):
        for step, _, _ in STEPS:
            values = steps.get(step, [])
            figures = [percentile(values, 0.5), percentile(values, 0.95), max(values, default=None)]
            table_rows.append([kind, step, len(values), *("–" if f is None else f"{f:.3f}" for f in figures)])
    return table_rows


def cpu_per_job(cpu: dict[str, float], rows: list[dict]) -> dict[str, float]:
    """Each role's CPU during the run a job (a file for intake and the web), in ms: the capacity model's inputs."""
    jobs, files = max(1, sum(1 for r in rows if r["durable"])), max(1, len(rows))
    return {role: 1000 * cpu.get(role, 0.0) / (jobs if role == "jobs" else files) for role in ("jobs", "intake", "web")}


def cpu_line(cpu: dict[str, float], jobs: int, files: int) -> str:
    """The CPU each role spent during the run, in all and a job (a file for intake and the web)."""
    if not jobs:
        return "CPU: no job finished"
    parts = [
        f"{role} {cpu[role]:.1f} s ({1000 * cpu[role] / (jobs if role == 'jobs' else files):.1f} ms a "
        f"{'job' if role == 'jobs' else 'file'})"
        for role in ("jobs", "intake", "web")
    ]
    total = sum(cpu[role] for role in ("jobs", "intake", "web"))
    return (
        f"CPU during the run: {', '.join(parts)}; {total:.1f} s in all, {1000 * total / jobs:.1f} ms a job; "
        f"the S3 server (moto) {cpu.get('S3 server', 0.0):.1f} s (PostgreSQL, Redis and the clients not counted)"
    )


def print_report(result: dict) -> None:
    options, rows = result["options"], result["rows"]
    rate = jobs_per_second(rows)
    print(
        f"load: {result['files']['form']} one-page forms and {result['files']['bundle']} {options['pages']}-page "
        f"bundles over the API by {options['clients']} clients; 2 worker hosts of {options['workers']} jobs "
        f"worker(s) each ({'a host name each' if result['namespaces'] else 'one host name'}), gunicorn with "
        f"{options['web_workers']} workers, {options['intake_workers']} intake worker(s); {os.cpu_count()} CPUs, "
        f"load average "
        f"{result['load'][0]:.2f} at start, {result['load'][-1]:.2f} at end"
    )
    print(
        f"sent in {result['sent_seconds']:.1f} s; jobs per host: {dict(Counter(r['host'] for r in rows if r['job']))}"
    )
    print(f"jobs per second (first received to last manifest durable): {'–' if rate is None else f'{rate:.2f}'}")
    print(cpu_line(result["cpu"], sum(1 for r in rows if r["durable"]), len(rows)) + "\n")
    table(["kind", "step", "jobs", "p50 s", "p95 s", "slowest s"], latency_rows(rows))
    if result["stalled"]:
        print(f"\nstopped waiting: nothing progressed for {STALL_SECONDS} s")
    failures = result["failures"]
    print(
        "\nchecks: " + ("all passed (nothing lost, no duplicate job, every manifest verifies)" if not failures else "")
    )
    for failure in failures[:50]:
        print(f"  FAILED {failure}")


if __name__ == "__main__":
    sys.exit(main())
