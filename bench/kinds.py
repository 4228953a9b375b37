"""The extractor per kind of bundle (legal, clinical, forms): Pagetrail against its floors and every peer.

Per-PDF costs (the child's round trip, opening, file creation) weigh on a kind of small files and not
on one 240-page bundle, so each kind is timed on its own. The tools take turns: each round times every
tool on every kind, one after the other, and each figure is the fastest of its rounds. On a shared
machine the load changes from one second to the next; taking turns keeps a ratio's two sides measured
under the same load.

Three floors: the raw copy (every image stream's stored bytes written and hashed); the guarantee
floor, the raw copy plus one inflate of each Flate image with the product's inflater: an extractor
that proves each wrapped image whole cannot do less; and the placements floor, the guarantee floor plus
each page's content parsed once for what it draws: an extractor that says where each image is drawn, as
a manifest does, cannot do less. The target is 1.15 times the guarantee floor. Pagetrail is timed twice:
through the warm, limited child process the product uses, and the same code in this process, so the child's
round trip shows apart. The peers: PyMuPDF, poppler's pdfimages, pikepdf's own extraction, each when it is
installed.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

from . import runners
from .tables import table

KINDS = ("legal", "clinical", "forms")
ROUNDS = 3
GOAL = 1.15  # × the guarantee floor
FLOOR, GUARANTEE, PLACEMENTS = "raw-copy floor", "guarantee floor", "placements floor"
PAGETRAIL, IN_PROCESS = "Pagetrail, 1 worker", "Pagetrail in this process"
PYMUPDF, PDFIMAGES, PIKEPDF = "PyMuPDF", "pdfimages", "pikepdf"
PEERS = (PYMUPDF, PDFIMAGES, PIKEPDF)
CPU = " CPU"  # the key of a tool's CPU seconds (its process and its children), steadier than wall time under load


def files_by_kind(truth: dict, corpus: Path) -> dict[str, list[Path]]:
    return {kind: [corpus / f["name"] for f in truth["files"] if f["kind"] == kind] for kind in KINDS}


def tools(references: bool = True) -> list[tuple[str, Callable, bool]]:
    """(name, one, warm) of each tool timed per kind; a peer only when it is installed."""
    found = [(FLOOR, runners.raw_copy, False), (GUARANTEE, runners.guarantee_floor, False)]
    found += [(PAGETRAIL, runners.pagetrail, True), (PLACEMENTS, runners.placements_floor, False)]
    found.append((IN_PROCESS, runners.pagetrail_in_process, False))
    if not references:
        return found
    peers = (
        (PYMUPDF, runners.pymupdf_tool()),
        (PDFIMAGES, runners.pdfimages_tool()),
        (PIKEPDF, runners.pikepdf_images),
    )
    return found + [(name, one, False) for name, one in peers if one]


def per_kind(by_kind: dict[str, list[Path]], scratch: Path, references: bool = True, rounds: int = ROUNDS) -> dict:
    """{kind: {tool: fastest wall seconds, tool + CPU: fewest CPU seconds}}, every tool over every kind in each
    round, one worker."""
    best: dict[str, dict[str, float]] = {kind: {} for kind in by_kind}
    runners.allocate_as_the_child()
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
    """The tables; returns {kind: {"megabytes", "files", tool: seconds}} with "all kinds" last, for the summary."""
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
            "raw-copy floor s",
            "guarantee floor s",
            "placements floor s",
            "Pagetrail s",
            f"× guarantee floor (goal ≤ {GOAL})",
            "CPU × guarantee floor",
            "× placements floor",
            "in this process s",
            "the child's round trip, ms a PDF",
            "× raw-copy floor",
        ],
        [_row(kind, f) for kind, f in figures.items()],
    )
    print("\n### The peers on the same kinds (same rounds): each one's seconds, and how many times Pagetrail's\n")
    table(
        ["kind", *(f"{peer} s" for peer in PEERS), *(f"{peer} ÷ Pagetrail (goal > 1)" for peer in PEERS)],
        [_peer_row(kind, f) for kind, f in figures.items()],
    )
    return figures


def _figures(seconds: dict[str, float], files: list[Path]) -> dict:
    return {"megabytes": sum(p.stat().st_size for p in files) / 1e6, "files": len(files), **seconds}


def _row(kind: str, f: dict) -> list:
    floor, guarantee, ours = f[FLOOR], f[GUARANTEE], f[PAGETRAIL]
    cpu = f"{f[PAGETRAIL + CPU] / f[GUARANTEE + CPU]:.2f}" if f[GUARANTEE + CPU] else "–"
    return [
        kind,
        f["files"],
        f"{f['megabytes']:.0f}",
        f"{floor:.3f}",
        f"{guarantee:.3f}",
        f"{f[PLACEMENTS]:.3f}",
        f"{ours:.3f}",
        f"{ours / guarantee:.2f}",
        cpu,
        f"{ours / f[PLACEMENTS]:.2f}",
        f"{f[IN_PROCESS]:.3f}",
        f"{1000 * (ours - f[IN_PROCESS]) / f['files']:.2f}",
        f"{ours / floor:.2f}",
    ]


def _peer_row(kind: str, f: dict) -> list:
    ours = f[PAGETRAIL]
    seconds = [f"{f[peer]:.3f}" if peer in f else "not run" for peer in PEERS]
    return [kind, *seconds, *(f"{f[peer] / ours:.1f}" if peer in f else "" for peer in PEERS)]


def summary_rows(figures: dict) -> list[list]:
    """Target 1 per kind and overall: Pagetrail beside the guarantee floor, and beside the fastest peer."""
    rows = []
    for kind, f in figures.items():
        guarantee, ours, mb = f[GUARANTEE], f[PAGETRAIL], f["megabytes"]
        rows.append(
            [
                f"1. extractor on {kind}, 1 worker",
                f"{mb / ours:.0f} MB/s, {1000 * ours / f['files']:.2f} ms a PDF",
                f"guarantee floor {mb / guarantee:.0f} MB/s (raw copy {mb / f[FLOOR]:.0f} MB/s)",
                f"{ours / guarantee:.2f}× guarantee floor ({ours / f[PLACEMENTS]:.2f}× placements floor)",
                f"≤ {GOAL}× guarantee floor",
            ]
        )
        ran = [peer for peer in PEERS if peer in f]
        if ran:
            fastest = min(ran, key=lambda peer: f[peer])
            rows.append(
                [
                    f"1. against the fastest peer on {kind}",
                    f"{mb / ours:.0f} MB/s",
                    f"{fastest} {mb / f[fastest]:.0f} MB/s (of {', '.join(ran)})",
                    f"{f[fastest] / ours:.2f}× faster",
                    "ahead of every peer (> 1)",
                ]
            )
    return rows
