"""`make evaluate-review`: precision and recall of each kind of page hint on a corpus with ground truth, and the
time per page, beside the goals docs/roles.md justifies.

    python -m bench.review_hints [--out DIR]

The corpus is bench/review_corpus.py's generated bundles plus real PDFs from tests/samples and tests/pdfs.py (no
damage: every hint on them is a false one). Each PDF is read the way the worker reads it, in the limited child.
"""

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench import review_corpus
from extraction import pdf
from extraction.pdf.page_hints import KINDS
from tests import pdfs

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "samples" / "py-pdf"
# kind -> (precision goal, recall goal), justified in docs/roles.md. Image-only numbering is read by OCR: its recall
# goal holds only where Tesseract is installed (without it those pages are not read, and say so).
GOALS: dict[str, tuple[float, float | None]] = {
    "missing_page (text pages)": (0.95, 0.90),
    "missing_page (image-only)": (0.95, 0.80),
    "out_of_order (text pages)": (0.90, 0.90),
    "out_of_order (image-only)": (0.90, 0.80),
    "repeated_page": (0.90, 0.90),
    "blank_page": (0.95, 0.95),
    "no_scan": (0.90, 0.95),
}


def row_of(kind: str, searchable: bool) -> str:
    if kind not in ("missing_page", "out_of_order"):
        return kind
    return f"{kind} (text pages)" if searchable else f"{kind} (image-only)"


def real_pdfs(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    made = [pdfs.long_scan(directory, pages=60), pdfs.mixed(directory), pdfs.bundle(directory)]
    return [*sorted(SAMPLES.glob("*.pdf")), *made]


def evaluate(directory: Path) -> tuple[dict[str, Counter], dict[str, float]]:
    """Per row: hints made, hints right, truths, truths found; and the pages read and seconds spent reading them, by
    whether OCR read them (image-only pages with Tesseract), or said it was unavailable, or was not needed."""
    counts: dict[str, Counter] = {row: Counter() for row in GOALS}
    timing: dict[str, float] = defaultdict(float)
    cases = [(path, bundle.truth, bundle.searchable) for path, bundle in review_corpus.corpus(directory / "made")]
    cases += [(path, {}, True) for path in real_pdfs(directory / "real")]
    for path, truth, searchable in cases:
        started = time.perf_counter()
        evidence = pdf.read_page_evidence(path)
        found = pdf.hints(evidence)
        how = next((page.ocr for page in evidence if page.ocr), "")
        timing[f"{how}:seconds"] += time.perf_counter() - started
        timing[f"{how}:pages"] += len(evidence)
        for kind in KINDS:
            judge(
                counts[row_of(kind, searchable)], [set(h.pages) for h in found if h.kind == kind], truth.get(kind, [])
            )
    return counts, timing


def judge(counter: Counter, hinted: list[set[int]], truths: list[tuple[int, ...]]) -> None:
    """A hint is right when it names a page of a true problem of its kind; a truth is found when a hint names it."""
    counter["hints"] += len(hinted)
    counter["right"] += sum(1 for pages in hinted if any(pages & set(t) for t in truths))
    counter["truths"] += len(truths)
    counter["found"] += sum(1 for t in truths if any(pages & set(t) for pages in hinted))


def table(counts: dict[str, Counter], timing: dict[str, float]) -> str:
    lines = [
        f"{'hint':<27} {'hints':>5} {'truths':>6} {'precision':>9} {'goal':>5} {'recall':>7} {'goal':>5}",
    ]
    for row, (p_goal, r_goal) in GOALS.items():
        c = counts[row]
        precision = c["right"] / c["hints"] if c["hints"] else 1.0
        recall = c["found"] / c["truths"] if c["truths"] else 1.0
        r_text = f"{r_goal:.2f}" if r_goal is not None and goal_holds(row, timing) else "-"
        lines.append(
            f"{row:<27} {c['hints']:>5} {c['truths']:>6} {precision:>9.2f} {p_goal:>5.2f} {recall:>7.2f} {r_text:>5}"
        )
    pages, seconds = sum(timing[f"{h}:pages"] for h in HOW), sum(timing[f"{h}:seconds"] for h in HOW)
    lines.append(f"{pages:.0f} pages read in {seconds:.2f} s: {per_page(seconds, pages)}")
    lines += [
        f"  {label}: {timing[f'{how}:pages']:.0f} pages, {per_page(timing[f'{how}:seconds'], timing[f'{how}:pages'])}"
        for how, label in HOW.items()
        if timing[f"{how}:pages"]
    ]
    if timing["unavailable:pages"]:
        lines.append("OCR unavailable (no tesseract here: `make ocr`): image-only numbering not read, no recall goal")
    return "\n".join(lines)


# How a bundle's pages were read: a bundle with image-only pages is timed with them (the generated ones are wholly
# scans), the others have text where they have scans, like the searchable generated ones.
HOW = {
    "read": "bundles with image-only pages (OCR read them)",
    "": "the others (text on every scan, or no scans: no OCR)",
    "unavailable": "bundles with image-only pages, OCR unavailable",
}


def per_page(seconds: float, pages: float) -> str:
    return f"{1000 * seconds / max(1, pages):.1f} ms per page"


def goal_holds(row: str, timing: dict[str, float]) -> bool:
    """Image-only recall is OCR's: no goal on a machine without Tesseract."""
    return "image-only" not in row or not timing["unavailable:pages"]


def met(counts: dict[str, Counter], timing: dict[str, float]) -> bool:
    for row, (p_goal, r_goal) in GOALS.items():
        c = counts[row]
        if c["hints"] and c["right"] / c["hints"] < p_goal:
            return False
        if r_goal is not None and goal_holds(row, timing) and c["truths"] and c["found"] / c["truths"] < r_goal:
            return False
    return True


def cost_without_hints(directory: Path, rounds: int = 3) -> str:
    """A 240-page bundle with nothing to suggest: its extraction (the job, before the manifest) beside the reading
    of its evidence (the previews queue, after it), taking turns, the fastest of `rounds` each."""
    bundle = pdfs.bundle(directory)
    extract, read, found = [], [], -1
    for index in range(rounds):
        out = directory / f"out-{index}"
        out.mkdir()
        started = time.perf_counter()
        pdf.extract_images(bundle, out)
        extract.append(time.perf_counter() - started)
        started = time.perf_counter()
        found = len(pdf.hints(pdf.read_page_evidence(bundle)))
        read.append(time.perf_counter() - started)
    return (
        f"240-page bundle without hints ({found} found): extraction {min(extract):.2f} s (the job: no hint work in "
        f"it); its page evidence {min(read):.2f} s on the previews queue after the manifest; the manifest's "
        "transaction adds one row (HintRun)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where the corpus is written (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        counts, timing = evaluate(args.out or Path(scratch))
        print(table(counts, timing))
        print(cost_without_hints(Path(scratch)))
    print("every goal met" if met(counts, timing) else "a goal is not met")
    return 0 if met(counts, timing) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
