"""Pagetrail's benchmark: prints tables of ratios against reference tools run here, now.

    python -m bench [--scale 1] [--seed 1] [--workers 1,2] [--out var/bench]

Generates (once, then reuses) the deterministic corpus under --out, then times: the raw-copy
floor, Pagetrail's extractor through the warm child process the product uses (and the same code
in this process, and with a fresh child per PDF, to show what the child costs), PyMuPDF and poppler's pdfimages when
installed; hashing of the outputs the way verification does it; validation against extraction
of the 240-page bundle, and refusal of hostile files. Outputs go to tmpfs when there is one.
Exits 1 when a correctness check fails (counts against corpus.json, JPEGs passed through,
identical outputs whatever the number of workers). Never a pass/fail on time: these figures
are for reading.
"""
import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import checks, runners
from .corpus import make_corpus
from .report import print_extraction, print_hashing, print_intake

TMPFS = Path("/dev/shm")


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    truth = make_corpus(options.out, options.scale, options.seed)
    files = [options.out / f["name"] for f in truth["files"]]
    print(f"corpus: {len(files)} PDFs, {truth['totals']['bytes'] / 1e6:.0f} MB, {truth['totals']['pages']} pages, "
          f"{truth['totals']['distinct_outputs']} images to write ({truth['totals']['smask_xobjects']} soft masks), "
          f"{truth['totals']['placements']} placements; seed {options.seed}, scale {options.scale}; "
          f"{os.cpu_count()} CPUs")
    for path in files:  # the first tool timed must not pay for reading the corpus from disk
        path.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="pagetrail-bench-", dir=TMPFS if TMPFS.is_dir() else None))
    try:
        runs = extraction_runs(files, scratch, options.workers, options.references)
        print_extraction(runs, truth)
        print_hashing(runs[1].directory)
        print_intake(truth, options.out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failures = checks.failures(runs, truth)
    print("\nchecks: " + ("all passed" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts for Pagetrail's extractor")
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the corpus is kept")
    parser.add_argument("--no-references", action="store_true", help="skip PyMuPDF and pdfimages")
    options = parser.parse_args(argv)
    options.workers = [int(w) for w in options.workers.split(",")]
    options.out = options.out / f"corpus-seed{options.seed}-scale{options.scale:g}"
    options.references = not options.no_references
    return options


def extraction_runs(files: list[Path], scratch: Path, workers: list[int], references: bool = True) -> list:
    """Every extractor over the corpus; the outputs of the last one are kept for the hashing table."""
    runs = [runners.timed("raw-copy floor (image streams copied out, no decoding)", files, scratch / "floor",
                          runners.raw_copy)]
    for count in workers:
        runs.append(runners.timed(f"Pagetrail, {count} worker{'s' * (count > 1)} (warm child process each)", files,
                                  scratch / f"pagetrail-{count}", runners.pagetrail, count))
    runs.append(runners.timed("Pagetrail's extraction in this process (no child)", files, scratch / "inproc",
                              runners.pagetrail_in_process))
    runs.append(runners.timed("Pagetrail, 1 worker, a fresh child per PDF (PAGETRAIL_CHILD_REUSE=1)", files,
                              scratch / "fresh", runners.pagetrail_fresh_child))
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
            found.append(runners.timed(name, files, scratch / name.split()[0], tool))
    return found


if __name__ == "__main__":
    sys.exit(main())
