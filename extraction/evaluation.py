"""The evaluation harness: one corpus through each provider, same concurrency, in scratch deployments.

Each provider gets a deployment of its own (embedded profile in a temporary data dir, one
`qcluster` with N workers), so the figures compare providers and nothing touches real data.
The managed provider is the bundled simulator unless INFRAI_BASE_URL/INFRAI_API_KEY point elsewhere.
"""

import json
import os
import secrets
import tempfile
import time
from pathlib import Path

from core import processes
from core.percentiles import percentile


class Deployment:
    def __init__(self, data_dir: Path, **env):
        self.data_dir = data_dir
        self.env = processes.embedded_env(data_dir, **env)

    def manage(self, *args, check=True) -> str:
        done = processes.manage(self.env, *args)
        if check and done.returncode:
            raise RuntimeError(f"manage.py {args[0]} failed: {done.stderr[-2000:]}")
        return done.stdout

    def run_until_settled(self, timeout: float) -> list[dict]:
        worker = processes.start_qcluster(self.env)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                rows = json.loads(self.manage("job_status", "--json"))
                if all(r["state"] in ("completed", "failed", "cancelled") for r in rows):
                    return rows
                time.sleep(1)
            raise RuntimeError(f"jobs did not settle within {timeout:.0f}s")
        finally:
            processes.stop(worker, grace=15)  # everything has settled: ask it to stop, insist if it takes its time


def evaluate(corpus: Path, concurrency: int, providers: list[str], timeout: float = 1800) -> dict:
    pdfs = sorted(str(p) for p in corpus.rglob("*.pdf"))
    if not pdfs:
        raise ValueError(f"No PDF under {corpus}.")
    with tempfile.TemporaryDirectory(prefix="pagetrail-evaluate-") as scratch:
        return {name: _run(name, pdfs, concurrency, Path(scratch) / name, timeout) for name in providers}


def _run(provider: str, pdfs: list[str], concurrency: int, data_dir: Path, timeout: float) -> dict:
    simulator, env = (
        None,
        {
            "PAGETRAIL_PROVIDER": provider,
            "PAGETRAIL_WORKERS": concurrency,
            "PAGETRAIL_QUEUE_NAME": f"evaluate-{provider}-{secrets.token_hex(4)}",
            "PAGETRAIL_POLL_BUDGET_SECONDS": 30,
            "PAGETRAIL_BACKOFF_BASE_SECONDS": 0.2,
        },
    )
    if provider == "infrai" and not os.environ.get("INFRAI_BASE_URL"):
        from .providers.simulator import Simulator

        key = secrets.token_urlsafe(16)
        simulator = Simulator(api_key=key, workers=concurrency)
        simulator.start()
        env |= {"INFRAI_BASE_URL": simulator.url, "INFRAI_API_KEY": key}
    try:
        deployment = Deployment(data_dir, **env)
        deployment.manage("migrate", "--noinput")
        # Validated in the command itself: the run measures extraction, not the intake queue.
        submitted = json.loads(deployment.manage("submit_bundle", "--json", "--here", *pdfs))
        started = time.monotonic()
        rows = deployment.run_until_settled(timeout)
        wall = time.monotonic() - started
        return _summary(provider, deployment, submitted, rows, wall, simulator)
    finally:
        if simulator:
            simulator.stop()


def _summary(provider, deployment, submitted, rows, wall, simulator) -> dict:
    pick = lambda key: [r[key] for r in rows if r[key] is not None]  # noqa: E731
    verify = json.loads(deployment.manage("verify_manifests", "--json", check=False))
    temp_left = [p for p in (deployment.data_dir / "temp" / "jobs").rglob("*") if p.is_file()]
    provider_jobs = simulator.submissions if simulator else sum(r["provider_submissions"] for r in rows)
    checks = {
        "every output hashed and mapped to pages": verify["ok"] and all(r["placements"] >= r["assets"] for r in rows),
        "no duplicate provider job": provider_jobs
        == len(rows) - sum(r["state"] == "failed" and not r["provider_submissions"] for r in rows),
        "no temp file survived": not temp_left,
    }
    return {
        "provider": provider,
        "bundles": len(submitted),
        "refused": sum(not s["accepted"] for s in submitted),
        "jobs": len(rows),
        "completed": sum(r["state"] == "completed" for r in rows),
        "wall_s": round(wall, 2),
        "queue_wait_s": _p(pick("queue_wait_s")),
        "extraction_s": _p(pick("extraction_s")),
        "manifest_write_s": _p(pick("manifest_write_s")),
        "retries": sum(r["retries"] for r in rows),
        "peak_temp_bytes": max(pick("temp_peak_bytes"), default=0),
        "needing_review": sum(r["needs_review"] for r in rows),
        "checks": checks,
    }


def _p(values: list[float]) -> dict:
    return {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}


def table(results: dict) -> str:
    names = list(results)
    lines = [("", *names)]
    for label, get in (
        ("bundles (refused)", lambda r: f"{r['bundles']} ({r['refused']})"),
        ("jobs completed", lambda r: f"{r['completed']}/{r['jobs']}"),
        ("wall s", lambda r: f"{r['wall_s']:.1f}"),
        ("queue wait p50 / p95 s", lambda r: _pair(r["queue_wait_s"])),
        ("extraction p50 / p95 s", lambda r: _pair(r["extraction_s"])),
        ("manifest write p50 / p95 s", lambda r: _pair(r["manifest_write_s"])),
        ("retries", lambda r: str(r["retries"])),
        ("peak temp bytes", lambda r: f"{r['peak_temp_bytes']:,}"),
        ("jobs needing review", lambda r: str(r["needing_review"])),
        *[
            (check, lambda r, c=check: "yes" if r["checks"][c] else "NO")
            for check in next(iter(results.values()))["checks"]
        ],
    ):
        lines.append((label, *(get(results[n]) for n in names)))
    width = [max(len(row[i]) for row in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, width)) for row in lines)


def _pair(p: dict) -> str:
    return " / ".join("-" if v is None else f"{v:.3f}" for v in (p["p50"], p["p95"]))
