"""What page hints add to a bundle's job: a 240-page bundle's extraction and manifest with hints asked, against the
same job with them not asked (as before hints), and the hints' own reading after the manifest.

    python -m bench.hint_cost [--rounds 5] [--summary FILE]

In a fresh data dir on the embedded default (SQLite; no cluster): the bundle (tests/pdfs.py `bundle`) submitted as
intake does it, then --rounds re-extractions each way, taking turns, each run here by `run_job` (the job's own work:
extraction in the PDF child, then complete_job's transaction writing the manifest), timed by the job's own
timestamps; the fastest of each. "Before hints" replaces `page_hints.request`, the one call the manifest's transaction
makes for them (a HintRun row, its task queued on commit), with nothing. Then `find_page_hints` on the last manifest,
as the previews queue runs it after the manifest. Never a pass or fail on time.
"""

import argparse
import json
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

from . import pipeline
from .tables import table

STEPS = {
    "extraction": ("submitted_at", "provider_finished_at"),
    "manifest": ("provider_finished_at", "manifest_durable_at"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hint_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    options = parser.parse_args(argv)
    data_dir = Path(
        tempfile.mkdtemp(prefix="pagetrail-hint-cost-", dir=pipeline.TMPFS if pipeline.TMPFS.is_dir() else None)
    )
    try:
        pipeline.embedded_env(data_dir, 1, {})
        result = measure(data_dir, options.rounds)
    finally:
        pipeline.cleanup(data_dir)
    print_table(result)
    if options.summary:
        options.summary.write_text(json.dumps(result))
    return 1 if result["failures"] else 0


def measure(data_dir: Path, rounds: int) -> dict:
    """The fastest extraction and manifest of `rounds` jobs with hints asked and `rounds` without, and the hints."""
    from django.core.management import call_command

    from audit.review import page_hints
    from extraction.intake.rounds import request_reextraction
    from tests import pdfs

    call_command("migrate", "--noinput", verbosity=0)
    bundle = submitted(pdfs.bundle(data_dir))
    timed: dict[str, dict[str, list[float]]] = {way: {step: [] for step in STEPS} for way in ("with", "without")}
    failures, manifest_id = [], None
    for _ in range(rounds):
        for way in timed:
            quiet = mock.patch.object(page_hints, "request") if way == "without" else nullcontext()
            with quiet:
                job = run(request_reextraction(bundle).pk)
            if job.status != job.Status.COMPLETED:
                failures.append(f"a job of the 240-page bundle ended {job.status}")
                continue
            for step, (begin, end) in STEPS.items():
                timed[way][step].append((getattr(job, end) - getattr(job, begin)).total_seconds())
            manifest_id = job.manifest.pk if way == "with" else manifest_id
    return {"failures": failures, "pages": pdfs.BUNDLE_PAGES, **fastest(timed), **hints_of(manifest_id)}


def submitted(path: Path):
    """The bundle taken in as the API and the intake worker do it; its first job run."""
    from extraction.intake import decision, staging
    from extraction.models import Bundle

    with open(path, "rb") as fh:
        staged = staging.stage(fh, filename=path.name, submitted_by="bench")
    submission = staging.receive(staged, filename=path.name, submitted_by="bench", queued=False)
    result = decision.result_of(decision.decide_here(submission))
    if result.job_id is None:
        raise RuntimeError(f"the 240-page bundle was refused at intake: {result.error_code}")
    run(result.job_id)  # the first one warms the child and the caches for both ways alike
    return Bundle.objects.get(jobs__pk=result.job_id)


def run(job_id: int):
    from extraction.models import Job
    from extraction.runner import run_job

    run_job(job_id)
    return Job.objects.select_related("manifest").get(pk=job_id)


def fastest(timed: dict[str, dict[str, list[float]]]) -> dict:
    return {f"{way}_{step}_s": min(times, default=0.0) for way, steps in timed.items() for step, times in steps.items()}


def hints_of(manifest_id: int | None) -> dict:
    """The hints' reading of the last manifest, as the previews queue's task does it."""
    import time

    from audit.review import page_hints

    if manifest_id is None:
        return {"hints_s": None, "hints": None}
    started = time.perf_counter()
    found = page_hints.find_page_hints(manifest_id)
    return {"hints_s": time.perf_counter() - started, "hints": found.get("hints")}


def print_table(result: dict) -> None:
    print(f"\n### Page hints: what a {result['pages']}-page bundle's job costs with them (the fastest of each way)\n")
    rows = [
        [f"{way} hints asked", f"{result[f'{way}_extraction_s']:.3f}", f"{result[f'{way}_manifest_s']:.3f}"]
        for way in ("without", "with")
    ]
    rows.append(
        [
            f"the hints themselves ({result['hints']} found), on the previews queue after the manifest",
            f"{result['hints_s'] or 0:.3f}",
            "",
        ]
    )
    table(["job", "extraction s", "manifest s"], rows)


if __name__ == "__main__":
    sys.exit(main())
