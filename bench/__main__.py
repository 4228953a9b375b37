"""Pagetrail's benchmark: prints tables of ratios against reference tools run here, now.

    python -m bench [--scale 1] [--seed 1] [--workers 1,2] [--out var/bench] [--no-references]
                    [--rounds 3] [--no-pipeline] [--production] [--admin-jobs 100000] [--admin-assets 1000000]
                    [--log-leaves 1000,100000,1000000] [--load]

Generates (once, then reuses) the deterministic corpus under --out, then times: the raw-copy
floor, Pagetrail's extractor through the warm child process the product uses (and the same code
in this process, and with a fresh child per PDF, to show what the child costs), PyMuPDF and poppler's pdfimages when
installed; on each kind of bundle (legal, clinical, forms: bench/kinds.py, --rounds turns each, in turn) the
raw-copy floor, the guarantee floor (the raw copy plus one inflate of each Flate image with the product's inflater),
Pagetrail and every peer installed (PyMuPDF, poppler's pdfimages, pikepdf's own extraction); the inflaters the
registries offer on the corpus's Flate images (bench/inflaters.py); hashing of the outputs the way verification
does it; validation against extraction
of the 240-page bundle, and refusal of hostile files. Outputs go to tmpfs when there is one.
Exits 1 when a correctness check fails (counts against corpus.json, JPEGs passed through,
identical outputs whatever the number of workers). Then, each in a process of its own (each sets
Django up its own way): the whole pipeline against the extractor alone (bench/pipeline.py; with --production
again on PostgreSQL, Redis and S3, bench/production.py), a one-image form's job in the cluster (bench/per_job.py,
the same profiles), a 240-page bundle's job with page hints asked and without (bench/hint_cost.py) and the
admin with --admin-jobs jobs and --admin-assets assets loaded (bench/admin_scale.py; 0 skips it), and the
ledger's proofs at --log-leaves leaves, from stored subtree hashes against a rebuild (bench/log_proofs.py; 0 skips);
with --load, throughput and tail latency over the API with two worker hosts (bench/load.py at its default scale:
a few minutes, so only when asked).
Last, a summary: each target beside its reference. Never a pass/fail on time:
these figures are for reading.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import checks, inflaters, kinds, runners
from .corpus import make_corpus
from .report import print_extraction, print_hashing, print_intake, print_summary

TMPFS = Path("/dev/shm")
BEST_OF = 3  # each extraction timed up to 3 times, the fastest kept (fewer runs past runners.BEST_OF_SECONDS)
# The benchmark measures the embedded default, whatever profile the shell it runs in is set up for.
NOT_EMBEDDED = ("DATABASE_URL", "REDIS_URL", "PAGETRAIL_INPUT_BUCKET", "PAGETRAIL_OUTPUT_BUCKET", "PAGETRAIL_DATA_DIR")


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    truth = make_corpus(options.out, options.scale, options.seed)
    files = [options.out / f["name"] for f in truth["files"]]
    print(
        f"corpus: {len(files)} PDFs, {truth['totals']['bytes'] / 1e6:.0f} MB, {truth['totals']['pages']} pages, "
        f"{truth['totals']['distinct_outputs']} images to write ({truth['totals']['smask_xobjects']} soft masks), "
        f"{truth['totals']['placements']} placements; seed {options.seed}, scale {options.scale}; "
        f"{os.cpu_count()} CPUs"
    )
    for path in files:  # the first tool timed must not pay for reading the corpus from disk
        path.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="pagetrail-bench-", dir=TMPFS if TMPFS.is_dir() else None))
    figures = {}
    try:
        runs = extraction_runs(files, scratch, options.workers, options.references)
        figures["extraction"] = print_extraction(runs, truth)
        by_kind = kinds.files_by_kind(truth, options.out)
        figures["kinds"] = kinds.print_kinds(
            kinds.per_kind(by_kind, scratch, options.references, options.rounds), by_kind, options.rounds
        )
        streams = inflaters.flate_streams(files)
        figures["inflaters"] = inflaters.print_table(
            inflaters.measure(streams, options.rounds), streams, options.rounds
        )
        figures["hashing"] = print_hashing(runs[1].directory)
        figures["intake"] = print_intake(truth, options.out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failures = checks.failures(runs, truth)
    pipeline_args = (
        *("--scale", f"{options.scale:g}", "--seed", str(options.seed)),
        *("--out", str(options.out.parent), "--workers", str(max(options.workers))),
    )
    if options.pipeline:
        figures["pipeline"] = in_own_process("pipeline", *pipeline_args)
    if options.pipeline and options.production:
        figures["pipeline_production"] = in_own_process("pipeline", "--production", *pipeline_args)
    # Below scale 1 the run is a smoke run (the tests'): one small batch a profile, no profiled batch.
    small = options.scale < 1
    per_job_args = (
        *("--out", str(options.out.parent), "--jobs", str(max(5, round(30 * options.scale)))),
        *(("--runs", "1", "--no-profile") if small else ("--runs", "3")),
    )
    if options.pipeline:
        figures["per_job"] = in_own_process("per_job", *per_job_args)
    if options.pipeline and options.production:
        figures["per_job_production"] = in_own_process("per_job", "--production", *per_job_args)
    if options.pipeline:
        figures["hint_cost"] = in_own_process("hint_cost", "--rounds", str(max(options.rounds, 3)))
    if options.admin_jobs:
        figures["admin"] = in_own_process(
            "admin_scale",
            "--jobs",
            str(options.admin_jobs),
            "--assets",
            str(options.admin_assets),
            "--data",
            str(options.out.parent / "admin"),
        )
    if options.log_leaves != "0":
        figures["log"] = in_own_process(
            "log_proofs", "--leaves", options.log_leaves, "--data", str(options.out.parent / "log")
        )
    if options.load:
        figures["load"] = in_own_process("load", "--out", str(options.out.parent))
    failures += [
        f"{part}: {failure}"
        for part in (
            "pipeline",
            "pipeline_production",
            "per_job",
            "per_job_production",
            "hint_cost",
            "admin",
            "log",
            "load",
        )
        for failure in figures.get(part, {}).get("failures", [])
    ]
    print_summary(figures)
    print("\nchecks: " + ("all passed" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


def in_own_process(module: str, *args: str) -> dict:
    """Run bench.<module> on the embedded default, its tables printed as they come; returns its headline figures."""
    sys.stdout.flush()
    env = {k: v for k, v in os.environ.items() if k not in NOT_EMBEDDED}
    with tempfile.NamedTemporaryFile(suffix=".json") as summary:
        done = subprocess.run(
            [sys.executable, "-m", f"bench.{module}", *args, "--summary", summary.name],
            cwd=Path(__file__).resolve().parent.parent,
            env=env,
        )
        text = Path(summary.name).read_text()
    if not text:
        return {"failures": [f"bench.{module} ended with status {done.returncode} before its summary"]}
    return json.loads(text)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts for Pagetrail's extractor")
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the corpus is kept")
    parser.add_argument("--no-references", action="store_true", help="skip PyMuPDF and pdfimages")
    parser.add_argument("--rounds", type=int, default=kinds.ROUNDS, help="rounds of the per-kind table")
    parser.add_argument("--no-pipeline", action="store_false", dest="pipeline", help="skip the pipeline benchmark")
    parser.add_argument(
        "--production",
        action="store_true",
        help="the pipeline again on PostgreSQL, Redis and S3 (moto): PAGETRAIL_TEST_DATABASE_URL's database is "
        "dropped and created anew, PAGETRAIL_TEST_REDIS_URL",
    )
    parser.add_argument("--admin-jobs", type=int, default=100_000, help="jobs loaded for the admin; 0 skips it")
    parser.add_argument("--admin-assets", type=int, default=1_000_000)
    parser.add_argument("--log-leaves", default="1000,100000,1000000", help="ledger sizes for proofs; 0 skips them")
    parser.add_argument(
        "--load",
        action="store_true",
        help="issue 36's target 3 (bench/load.py): 200 forms and 2 bundles over the API, two worker hosts, on "
        "PostgreSQL, Redis and S3 (PAGETRAIL_TEST_DATABASE_URL's database dropped and created anew)",
    )
    options = parser.parse_args(argv)
    options.workers = [int(w) for w in options.workers.split(",")]
    options.out = options.out / f"corpus-seed{options.seed}-scale{options.scale:g}"
    options.references = not options.no_references
    return options


def extraction_runs(files: list[Path], scratch: Path, workers: list[int], references: bool = True) -> list:
    """Every extractor over the corpus; the outputs of the last one are kept for the hashing table."""
    runs = [
        runners.timed(
            "raw-copy floor (image streams copied out, no decoding)",
            files,
            scratch / "floor",
            runners.raw_copy,
            best_of=BEST_OF,
        )
    ]
    for count in workers:
        runs.append(
            runners.timed(
                f"Pagetrail, {count} worker{'s' * (count > 1)} (warm child process each)",
                files,
                scratch / f"pagetrail-{count}",
                runners.pagetrail,
                count,
                warm=True,
                best_of=BEST_OF,
            )
        )
    runs.append(
        runners.timed(
            "Pagetrail's extraction in this process (no child)",
            files,
            scratch / "inproc",
            runners.pagetrail_in_process,
            best_of=BEST_OF,
        )
    )
    runs.append(
        runners.timed(
            "Pagetrail, 1 worker, a fresh child per PDF (PAGETRAIL_CHILD_REUSE=1)",
            files,
            scratch / "fresh",
            runners.pagetrail_fresh_child,
            best_of=BEST_OF,
        )
    )
    runs += reference_runs(files, scratch) if references else []
    for run in runs[:1] + runs[2:]:  # tmpfs is memory: keep only what the hashing table reads
        if run.directory:
            shutil.rmtree(run.directory, ignore_errors=True)
    return runs


def reference_runs(files: list[Path], scratch: Path) -> list:
    found = []
    for name, tool in (("PyMuPDF", runners.pymupdf_tool()), ("poppler pdfimages -all", runners.pdfimages_tool())):
        if tool is None:
            found.append(runners.skipped(name, "not installed (`make bench` installs it)"))
        else:
            found.append(runners.timed(name, files, scratch / name.split()[0], tool, best_of=BEST_OF))
    return found


if __name__ == "__main__":
    sys.exit(main())
