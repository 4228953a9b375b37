"""Where the time of one small PDF goes: the extraction built up step by step on the corpus's forms.

    python -m bench.per_pdf [--scale 1] [--seed 1] [--out var/bench] [--kind forms] [--rounds 5]

Each step runs everything the one before did, plus one thing: open the PDF, list what its pages draw,
read each image's stream, encode it (the checks; a JPEG is passed through), hash it, write it (that
is `extract` in this process), send the result through JSON both ways, then the product's path through
the warm child. The difference between two rows is the cost of the step. The raw-copy floor is shown
for reference. The steps take turns (each round runs every step), each figure is the fastest round's;
CPU is this process's and its PDF child's, steadier than wall time on a shared machine.
"""

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from extraction.pdf import Limits, extract_images
from extraction.pdf.draws import Drawing
from extraction.pdf.encode import encode
from extraction.pdf.extract import extract
from extraction.pdf.protocol import extraction_from_dict, to_json
from extraction.pdf.sandbox import stop_idle_children, warm_up
from extraction.pdf.validate import opened

from . import runners
from .corpus import make_corpus
from .tables import table

LIMITS = Limits()


def drawn(source) -> list:
    drawing = Drawing(source.pdf, [])
    return [draw for number, page in enumerate(source.pdf.pages, 1) for draw in drawing.page_draws(number, page)]


def open_only(path: Path, out: Path) -> None:
    with opened(path) as source:
        source.flags()


def list_draws(path: Path, out: Path) -> None:
    with opened(path) as source:
        drawn(source)


def read_streams(path: Path, out: Path) -> None:
    with opened(path) as source:
        for draw in drawn(source):
            draw.image.read_raw_bytes()


def encode_images(path: Path, out: Path) -> None:
    with opened(path) as source:
        for draw in drawn(source):
            encode(draw.image, LIMITS.max_pixels)


def hash_outputs(path: Path, out: Path) -> None:
    with opened(path) as source:
        for draw in drawn(source):
            hashlib.sha256(encode(draw.image, LIMITS.max_pixels).data).hexdigest()


def json_both_ways(path: Path, out: Path) -> None:
    extraction_from_dict(json.loads(to_json(extract(path, out, LIMITS))))


STEPS = [
    ("raw-copy floor (for reference)", lambda path, out: runners.raw_copy(path, out)),
    ("open the PDF (pikepdf, leading bytes, qpdf's warnings)", open_only),
    ("+ list the images each page draws (content streams parsed)", list_draws),
    ("+ read each image's stream", read_streams),
    ("+ encode (checks; JPEG passed through)", encode_images),
    ("+ sha256 of each output", hash_outputs),
    ("+ write each file, the result's assets: `extract` in this process", lambda path, out: extract(path, out, LIMITS)),
    ("+ the result to JSON and back", json_both_ways),
    ("the product's path: `extract_images` through the warm child", lambda path, out: extract_images(path, out)),
]


def measure(files: list[Path], scratch: Path, rounds: int) -> dict[str, tuple[float, float]]:
    """{step: (fastest wall seconds, fewest CPU seconds)} over `files`, one PDF after another."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for name, step in STEPS:
            dirs = [scratch / str(i) for i in range(len(files))]
            for directory in dirs:
                directory.mkdir(parents=True)
            stop_idle_children()
            warm_up(LIMITS)
            start, cpu = time.perf_counter(), runners.cpu_seconds()
            for path, directory in zip(files, dirs):
                step(path, directory)
            wall, cpu = time.perf_counter() - start, runners.cpu_seconds() - cpu
            old = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(old[0], wall), min(old[1], cpu))
            shutil.rmtree(scratch, ignore_errors=True)
    return best


def print_table(best: dict[str, tuple[float, float]], files: list[Path], kind: str, rounds: int) -> None:
    count, megabytes = len(files), sum(p.stat().st_size for p in files) / 1e6
    print(
        f"\n### Per PDF, step by step ({count} {kind}, {megabytes:.0f} MB, one after another; the fastest of "
        f"{rounds} rounds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n"
    )
    rows, previous = [], None
    for name, (wall, cpu) in best.items():
        step = (
            ""
            if previous is None or name.startswith(("raw-copy", "open the"))
            else f"{1000 * (cpu - previous) / count:+.3f}"
        )
        rows.append([name, f"{1000 * wall / count:.3f}", f"{1000 * cpu / count:.3f}", step])
        previous = None if name.startswith("raw-copy") else cpu
    table(["step", "wall ms a PDF", "CPU ms a PDF", "this step, CPU ms a PDF"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.per_pdf", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the corpus is kept")
    parser.add_argument("--kind", default="forms", choices=("forms", "clinical", "legal"))
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    corpus = options.out / f"corpus-seed{options.seed}-scale{options.scale:g}"
    truth = make_corpus(corpus, options.scale, options.seed)
    files = [corpus / f["name"] for f in truth["files"] if f["kind"] == options.kind]
    for path in files:
        path.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="pagetrail-per-pdf-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        print_table(measure(files, scratch / "steps", options.rounds), files, options.kind, options.rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        stop_idle_children()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
