"""Short waits are short: a 12-page bundle through the managed path against a rate-limited provider.

    python -m bench.short_waits [--pages 12] [--retry-after 1] [--workers 2]

Starts `manage.py provider_simulator --profile rate_limited` (429 with Retry-After on every other
request, real HTTP) and a real `manage.py qcluster` on a data dir of their own, submits one bundle
of --pages pages (10 distinct images on 12 pages), and waits for its manifest. Prints the wall
time from enqueue to manifest, the sum of the Retry-After waits the simulator asked for, the
extraction time, their ratio, and the attempt rows (per kind and outcome). Figures for reading,
never a pass/fail on time.
"""

import argparse
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .pipeline import ROOT, cleanup, embedded_env, start_cluster, stop_cluster, wait_until_ready

WAIT_FOR_JOB_SECONDS = 900


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--retry-after", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args(argv)
    result = run(options.pages, options.retry_after, options.workers)
    print_report(result)
    return 0 if result["status"] == "completed" else 1


def run(pages: int, retry_after: int, workers: int) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="pagetrail-short-waits-"))
    port = free_port()
    simulator = cluster = None
    try:
        env = managed_env(data_dir, workers, port)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        simulator = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "provider_simulator",
                "--port",
                str(port),
                "--profile",
                "rate_limited",
                "--retry-after",
                str(retry_after),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(data_dir / "simulator.log", "w"),
            start_new_session=True,
        )
        wait_for_port(port)
        cluster = start_cluster(env, data_dir / "qcluster.log")
        wait_until_ready(cluster, data_dir / "qcluster.log", workers)
        return measure(bundle_pdf(data_dir / "bundle.pdf", pages))
    finally:
        if cluster is not None:
            stop_cluster(cluster)
        if simulator is not None:
            stop_cluster(simulator)
        cleanup(data_dir)


def managed_env(data_dir: Path, workers: int, port: int) -> dict:
    """The embedded profile with the managed provider (the simulator on `port`), for every process here."""
    managed = {
        "PAGETRAIL_PROVIDER": "infrai",
        "INFRAI_BASE_URL": f"http://127.0.0.1:{port}",
        "INFRAI_API_KEY": secrets.token_urlsafe(24),
    }
    return embedded_env(data_dir, workers, {}, managed)


def measure(path: Path) -> dict:
    from extraction.intake.staging import submit_bundle
    from extraction.models import Job

    with open(path, "rb") as fh:
        result = submit_bundle(fh, filename=path.name, submitted_by="bench")
    deadline = time.monotonic() + WAIT_FOR_JOB_SECONDS
    assert result.job_id is not None, result.message  # the bench's own PDFs are accepted
    job = Job.objects.get(pk=result.job_id)
    while not job.is_terminal and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    attempts = list(job.attempts.order_by("number"))
    return {
        "status": job.status,
        "error": job.error_code,
        "wall_s": ((job.manifest_durable_at or job.enqueued_at) - job.enqueued_at).total_seconds(),
        "asked_s": sum(a.retry_after_s or 0 for a in attempts if a.http_status == 429),
        "extraction_s": job.extraction_time.total_seconds() if job.extraction_time else 0.0,
        "assets": job.manifest.assets.count() if hasattr(job, "manifest") else 0,
        "attempts": Counter((a.kind, a.outcome) for a in attempts),
        "downloads_per_asset": max(
            Counter(a.target for a in attempts if a.kind == "download" and a.outcome == "ok").values(), default=0
        ),
    }


def bundle_pdf(path: Path, pages: int) -> Path:
    """`pages` pages, 10 distinct JPEG 'scans' on the first 10, the last pages text-free and image-free."""
    sys.path.insert(0, str(ROOT))
    from tests import pdfs

    doc = pdfs.Doc()
    for page in range(pages):
        doc.page(*([pdfs.jpeg(doc, pdfs.pattern_picture(page))] if page < 10 else []))
    return doc.save(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the provider simulator did not listen on port {port}")


def print_report(r: dict) -> None:
    floor = r["asked_s"] + r["extraction_s"]
    print(f"job {r['status']} {r['error']}: {r['assets']} assets, enqueue to manifest {r['wall_s']:.1f} s")
    print(f"Retry-After asked by the provider, summed: {r['asked_s']:.1f} s; extraction: {r['extraction_s']:.1f} s")
    print(f"wall / (asked + extraction) = {r['wall_s'] / floor if floor else float('nan'):.2f} (target: under 2)")
    print(f"verified downloads per asset: {r['downloads_per_asset']} (1: none fetched or recorded twice)")
    for (kind, outcome), n in sorted(r["attempts"].items()):
        print(f"  attempts {kind:<9} {outcome:<8} {n}")
    print(f"  attempts total           {sum(r['attempts'].values())}")


if __name__ == "__main__":
    sys.exit(main())
