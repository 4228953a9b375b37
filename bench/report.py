"""The benchmark's printed tables: Markdown, so the README can quote them as they are."""
import hashlib
import time
from pathlib import Path

from extraction.pdf import Limits, Refusal, extract_images, inspect_pdf

from . import hostile

REPEATS = 3


def table(header: list[str], rows: list[list]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def print_extraction(runs: list, truth: dict) -> None:
    megabytes, floor = truth["totals"]["bytes"] / 1e6, runs[0].seconds
    print("\n### Extraction (every image of every PDF written and hashed; outputs on tmpfs)\n")
    rows = []
    for run in runs:
        if run.skipped:
            rows.append([run.name, "skipped: " + run.skipped, "", "", ""])
            continue
        rows.append([run.name, f"{run.seconds:.2f}", f"{megabytes / run.seconds:.0f}",
                     f"{run.images / run.seconds:,.0f}" if run.images else "–", f"{run.seconds / floor:.1f}"])
    table(["extractor", "wall s", "MB/s", "images/s", "× floor"], rows)


def best_of(action, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def print_hashing(outputs: Path) -> None:
    """Verification's streamed file hashing against hashlib over the same files read whole, and
    against hashlib over bytes already in memory (no I/O at all: the ceiling)."""
    paths = sorted(p for p in outputs.rglob("*") if p.is_file())
    blobs = [p.read_bytes() for p in paths]
    megabytes = sum(map(len, blobs)) / 1e6
    in_memory = best_of(lambda: [hashlib.sha256(b).digest() for b in blobs])
    whole = best_of(lambda: [hashlib.sha256(p.read_bytes()).digest() for p in paths])
    streamed = best_of(lambda: [_file_digest(p) for p in paths])
    print(f"\n### Verification hashing ({len(paths):,} extracted files, {megabytes:.0f} MB, one core, "
          f"best of {REPEATS})\n")
    table(["sha256", "wall s", "MB/s", "× hashlib over files"], [
        _hash_row("hashlib over bytes already in memory (no I/O)", in_memory, megabytes, whole),
        _hash_row("hashlib over each file read whole (reference)", whole, megabytes, whole),
        _hash_row("verification: `hashlib.file_digest` over each file", streamed, megabytes, whole),
    ])


def _hash_row(name: str, seconds: float, megabytes: float, reference: float) -> list:
    return [name, f"{seconds:.3f}", f"{megabytes / seconds:.0f}", f"{reference / seconds:.2f}"]


def _file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def print_intake(truth: dict, corpus: Path, scratch: Path) -> None:
    bundle = corpus / next(f["name"] for f in truth["files"] if f["kind"] == "legal")
    out = scratch / "bundle"
    out.mkdir()
    validation = best_of(lambda: inspect_pdf(bundle))
    extraction = best_of(lambda: extract_images(bundle, out))
    pages = next(f["pages"] for f in truth["files"] if f["kind"] == "legal")
    print(f"\n### Intake: validation of the {pages}-page bundle against its extraction (best of {REPEATS})\n")
    table(["step", "wall s", "share of extraction"], [
        ["`inspect_pdf` (validation, child process)", f"{validation:.3f}", f"{validation / extraction:.0%}"],
        ["`extract_images` (child process)", f"{extraction:.3f}", "100%"],
    ])
    print_refusals(scratch / "hostile")


def print_refusals(directory: Path) -> None:
    directory.mkdir()
    made = hostile.corpus(directory)
    if not made:
        print("\n(hostile files: tests/pdfs.py is not importable; refusal times skipped)")
        return
    rows = []
    for name, path in made:
        start = time.perf_counter()
        try:
            inspect_pdf(path, Limits())
            code = "ACCEPTED"
        except Refusal as exc:
            code = exc.code
        rows.append([name, code, f"{time.perf_counter() - start:.3f}"])
    print(f"\n### Refusal of hostile files (default limits: {Limits().memory_bytes >> 20} MiB, "
          f"{Limits().cpu_seconds} s CPU per child)\n")
    table(["file", "refused as", "wall s"], rows + [["slowest", "", max(r[2] for r in rows)]])
