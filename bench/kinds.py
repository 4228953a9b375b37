"""The extractor per kind of bundle (legal, clinical, forms): Pagetrail against the raw-copy floor and PyMuPDF.

Per-PDF costs (the child's round trip, opening, file creation) weigh on a kind of small files and not
on one 240-page bundle, so each kind is timed on its own. The tools take turns: each round times every
tool on every kind, one after the other, and each figure is the fastest of its rounds. On a shared
machine the load changes from one second to the next; taking turns keeps a ratio's two sides measured
under the same load.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

from . import runners
from .tables import table

KINDS = ("legal", "clinical", "forms")
ROUNDS = 3
FLOOR, PAGETRAIL, PYMUPDF = "raw-copy floor", "Pagetrail, 1 worker", "PyMuPDF"
CPU = " CPU"  # the key of a tool's CPU seconds (its process and PDF child), steadier than wall time under load


def files_by_kind(truth: dict, corpus: Path) -> dict[str, list[Path]]:
    return {kind: [corpus / f["name"] for f in truth["files"] if f["kind"] == kind] for kind in KINDS}


def tools(references: bool = True) -> list[tuple[str, Callable, bool]]:
    """(name, one, warm) of each tool timed per kind; PyMuPDF only when it is installed."""
    found = [(FLOOR, runners.raw_copy, False), (PAGETRAIL, runners.pagetrail, True)]
    mupdf = runners.pymupdf_tool() if references else None
    return found + ([(PYMUPDF, mupdf, False)] if mupdf else [])


def per_kind(by_kind: dict[str, list[Path]], scratch: Path, references: bool = True, rounds: int = ROUNDS) -> dict:
    """{kind: {tool: fastest wall seconds, tool + CPU: fewest CPU seconds}}, every tool over every kind in each
    round, one worker."""
    best: dict[str, dict[str, float]] = {kind: {} for kind in by_kind}
    for _ in range(rounds):
        for kind, files in by_kind.items():
            for name, one, warm in tools(references):
                run = runners.timed(name, files, scratch / "kinds", one, 1, warm=warm)
                for key, value in ((name, run.seconds), (name + CPU, run.cpu_seconds)):
                    best[kind][key] = min(best[kind].get(key, float("inf")), value)
                shutil.rmtree(scratch / "kinds", ignore_errors=True)
    return best


def overall(best: dict[str, dict[str, float]]) -> dict[str, float]:
    """The whole corpus: each tool's seconds summed over the kinds (only tools timed on every kind)."""
    names = set.intersection(*(set(tools) for tools in best.values()))
    return {name: sum(tools[name] for tools in best.values()) for name in names}


def print_kinds(best: dict[str, dict[str, float]], by_kind: dict[str, list[Path]], rounds: int = ROUNDS) -> dict:
    """The table; returns {kind: {"megabytes", "files", tool: seconds}} with "all kinds" last, for the summary."""
    figures = {kind: _figures(best[kind], by_kind[kind]) for kind in by_kind}
    figures["all kinds"] = _figures(overall(best), [p for files in by_kind.values() for p in files])
    print(
        f"\n### Extraction per kind of bundle (1 worker, warm child; the tools take turns, the fastest of {rounds} "
        "rounds; outputs on tmpfs, every output hashed)\n"
    )
    table(
        [
            "kind",
            "PDFs",
            "MB",
            "floor s",
            "Pagetrail s",
            "× floor (goal ≤ 1.5)",
            "CPU × floor",
            "PyMuPDF s",
            "× faster than PyMuPDF (goal ≥ 10)",
            "PyMuPDF ÷ floor (the most any extractor at the floor gains)",
        ],
        [_row(kind, f) for kind, f in figures.items()],
    )
    return figures


def _figures(seconds: dict[str, float], files: list[Path]) -> dict:
    return {"megabytes": sum(p.stat().st_size for p in files) / 1e6, "files": len(files), **seconds}


def _row(kind: str, f: dict) -> list:
    floor, ours, mupdf = f[FLOOR], f[PAGETRAIL], f.get(PYMUPDF)
    against = [f"{mupdf:.3f}", f"{mupdf / ours:.1f}", f"{mupdf / floor:.1f}"] if mupdf else ["not run", "", ""]
    cpu = f"{f[PAGETRAIL + CPU] / f[FLOOR + CPU]:.2f}" if f[FLOOR + CPU] else "–"
    return [
        kind,
        f["files"],
        f"{f['megabytes']:.0f}",
        f"{floor:.3f}",
        f"{ours:.3f}",
        f"{ours / floor:.2f}",
        cpu,
        *against,
    ]


def summary_rows(figures: dict) -> list[list]:
    """Target 1 per kind and overall: Pagetrail beside the floor, and beside PyMuPDF."""
    rows = []
    for kind, f in figures.items():
        floor, ours, mupdf, mb = f[FLOOR], f[PAGETRAIL], f.get(PYMUPDF), f["megabytes"]
        rows.append(
            [
                f"1. extractor on {kind}, 1 worker",
                f"{mb / ours:.0f} MB/s, {1000 * ours / f['files']:.2f} ms a PDF",
                f"raw-copy floor {mb / floor:.0f} MB/s",
                f"{ours / floor:.2f}× floor",
                "≤ 1.5× floor",
            ]
        )
        if mupdf:
            rows.append(
                [
                    f"1. against PyMuPDF on {kind}",
                    f"{mb / ours:.0f} MB/s",
                    f"PyMuPDF {mb / mupdf:.0f} MB/s (itself {mupdf / floor:.1f}× floor)",
                    f"{mupdf / ours:.1f}× faster",
                    "≥ 10× faster",
                ]
            )
    return rows
