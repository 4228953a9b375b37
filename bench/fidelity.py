"""Pagetrail against poppler on a directory of real-world PDFs: crashes, refusals, placements, pixels.

    python -m bench.fidelity CORPUS_DIR [--jobs 2] [--timeout 300] [--out var/fidelity]
                             [--only NAMES] [--merge RECORDS]

Every `*.pdf` under CORPUS_DIR goes through the product's own entry points (`inspect_pdf` at intake, its
findings judged by the intake policy's rules under PAGETRAIL_INTAKE_POLICY, then `extract_images`, with the
default Limits), and through poppler (`pdfinfo`, `pdfimages -list`,
`pdfimages -png`/`-tiff`) as the oracle, with MuPDF (`mutool extract`) as a second opinion on
samples; bench/fidelity_file.py says what is compared and bench/fidelity_pixels.py how samples are.
--only takes a file of corpus-relative names (one a line) and checks only those; --merge takes an
earlier run's records.jsonl and reports its records for every file not checked now (run time added),
so that a change which can only alter some files' outcome is measured without running the rest again.
Files run in --jobs worker processes; one that takes longer than --timeout seconds has its worker
killed and is recorded as `hung`. Prints a table, and writes to
--out: `records.jsonl` (one line per file), `disagreements.md` (grouped by class, with example files)
and `summary.json` (the table's figures). The corpus is built as bench/corpus_sources.md describes.
"""

import argparse
import json
import multiprocessing
import os
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from multiprocessing.connection import wait
from pathlib import Path

from .fidelity_file import check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one file may take")
    parser.add_argument("--out", type=Path, default=Path("var/fidelity"))
    parser.add_argument("--only", type=Path, help="a file of corpus-relative names: check only these")
    parser.add_argument("--merge", type=Path, help="an earlier records.jsonl, kept for files not checked now")
    options = parser.parse_args(argv)
    files = sorted(options.corpus.rglob("*.[pP][dD][fF]"))
    if options.only:
        wanted = set(options.only.read_text().split("\n")) - {""}
        files = [f for f in files if str(f.relative_to(options.corpus)) in wanted]
    started = time.monotonic()
    records = run(files, options.corpus, options.jobs, options.timeout)
    seconds = time.monotonic() - started
    if options.merge:
        records, seconds = merged(options.merge, records, seconds)
    summary = summarise(records, seconds)
    print_table(summary)
    write(options.out, records, summary)
    return 0


def run(files: list[Path], corpus: Path, jobs: int, timeout: float) -> list[dict]:
    """Check every file in `jobs` worker processes; a worker past `timeout` on a file is killed."""
    pending = list(reversed(files))
    workers: list[Worker] = []
    records = []
    with tempfile.TemporaryDirectory(prefix="pagetrail-fidelity-") as scratch:
        while pending or workers:
            while pending and len(workers) < max(1, jobs):
                workers.append(Worker(pending.pop(), corpus, Path(scratch)))
            ready = wait([w.conn for w in workers], timeout=1.0)
            for worker in list(workers):
                if worker.conn in ready or worker.overdue(timeout):
                    records.append(worker.finish(timeout))
                    workers.remove(worker)
                    if len(records) % 100 == 0:
                        print(f"{len(records)} / {len(files)} files", file=sys.stderr, flush=True)
    return sorted(records, key=lambda r: r["file"])


class Worker:
    """One file in a process of its own session, so a hung file's whole process tree can be killed."""

    context = multiprocessing.get_context("fork")

    def __init__(self, path: Path, corpus: Path, scratch: Path):
        self.name = str(path.relative_to(corpus))
        self.conn, child = self.context.Pipe(duplex=False)
        self.process = self.context.Process(target=_serve, args=(child, path, self.name, scratch), daemon=True)
        self.process.start()
        child.close()
        self.started = time.monotonic()

    def overdue(self, timeout: float) -> bool:
        return time.monotonic() - self.started > timeout

    def finish(self, timeout: float) -> dict:
        try:
            record = self.conn.recv() if self.conn.poll() else None
        except EOFError:
            record = None
        if record is None:
            hung = self.overdue(timeout)
            self._kill()
            kind = "hung" if hung else "died"
            record = {
                "file": self.name,
                "intake": {"outcome": kind},
                "disagreements": [(f"{kind}:harness", f"no answer after {time.monotonic() - self.started:.0f} s")],
            }
        self.process.join(5)
        self.conn.close()
        return record

    def _kill(self) -> None:
        assert self.process.pid is not None  # started in __init__
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _serve(conn, path: Path, name: str, scratch: Path) -> None:
    os.setsid()
    conn.send(check(path, name, scratch))
    conn.close()


def merged(earlier: Path, records: list[dict], seconds: float) -> tuple[list[dict], float]:
    """This run's records over an earlier run's (by file), and the two runs' time together."""
    by_file = {r["file"]: r for r in map(json.loads, earlier.read_text().splitlines())}
    by_file.update((r["file"], r) for r in records)
    summary = earlier.with_name("summary.json")
    before = json.loads(summary.read_text()).get("seconds", 0) if summary.exists() else 0
    return sorted(by_file.values(), key=lambda r: r["file"]), seconds + before


def summarise(records: list[dict], seconds: float) -> dict:
    intake = Counter(r["intake"]["outcome"] for r in records)
    refusals: defaultdict[str, dict[str, int]] = defaultdict(lambda: {"files": 0, "poppler_opens": 0, "policy": 0})
    for r in records:
        if r["intake"]["outcome"] == "refused":
            row = refusals[r["intake"]["code"]]
            row["files"] += 1
            row["poppler_opens"] += bool(r.get("poppler_opens"))
            row["policy"] += bool(r["intake"]["policy"])
    extracted = [r for r in records if "extraction" in r]
    outputs = [o for r in records for o in r.get("outputs", [])]
    flagged = [r for r in records if r["intake"]["outcome"] == "accepted" and _flagged(r)]
    results = Counter(o["result"] for o in outputs)
    checked = sum(n for result, n in results.items() if result not in ("unmatched", "no_oracle", "unreadable"))
    return {
        "files": len(records),
        "seconds": round(seconds),
        "poppler_opens": sum(bool(r.get("poppler_opens")) for r in records),
        "accepted": intake["accepted"],
        "accepted_flagged": len(flagged),
        "policy_findings": _policy_findings(records),
        "intake_crashes": intake["crash"],
        "hung": intake["hung"] + intake["died"],
        "extraction_crashes": sum(r["extraction"]["outcome"] == "crash" for r in extracted),
        "extraction_failed": sum(r["extraction"]["outcome"] == "failed" for r in extracted),
        "refusals": dict(sorted(refusals.items())),
        "refused_poppler_opens_not_policy": sum(
            r["intake"]["outcome"] == "refused" and not r["intake"]["policy"] and bool(r.get("poppler_opens"))
            for r in records
        ),
        "placements_compared": sum(r.get("placements", {}).get("agree") is not None for r in extracted),
        "placements_agree": sum(bool(r.get("placements", {}).get("agree")) for r in extracted),
        "outputs": len(outputs),
        "outputs_checked": checked,
        "pixel_equal": results["equal"],
        "by_design": sum(n for result, n in results.items() if result.startswith("by-design:")),
        "outputs_unmatched": results["unmatched"] + results["no_oracle"],
        "pillow_unreadable": results["unreadable"],
        "classes": Counter(kind for r in records for kind, _ in r["disagreements"]).most_common(),
    }


def _flagged(record: dict) -> bool:
    return any(action == "flag" for _, action in record["intake"].get("found", []))


def _policy_findings(records: list[dict]) -> dict[str, dict[str, int]]:
    """Per kind the intake policy decides on: the files holding it, and what became of each file (refused, by this
    kind or another; accepted with a review flag; accepted)."""
    kinds: defaultdict[str, dict[str, int]] = defaultdict(
        lambda: {"files": 0, "refused": 0, "flagged": 0, "accepted": 0}
    )
    for r in records:
        intake = r["intake"]
        outcome = "refused" if intake["outcome"] == "refused" else "flagged" if _flagged(r) else "accepted"
        for kind in dict(intake.get("found", [])):
            kinds[kind]["files"] += 1
            kinds[kind][outcome] += 1
    return dict(sorted(kinds.items()))


def _percent(part: int, whole: int) -> str:
    return f"{part} / {whole} ({100 * part / whole:.1f}%)" if whole else f"{part} / 0"


def print_table(s: dict) -> None:
    lines = [
        ("files", s["files"]),
        ("poppler opens", s["poppler_opens"]),
        ("crashes at intake", s["intake_crashes"]),
        ("crashes at extraction", s["extraction_crashes"]),
        ("hung (killed by the harness)", s["hung"]),
        ("accepted", s["accepted"]),
        ("accepted with an intake policy flag", s.get("accepted_flagged", 0)),
        ("refused, not policy, poppler opens", s["refused_poppler_opens_not_policy"]),
        ("extraction failed (permanent)", s["extraction_failed"]),
        ("placements agree with pdfimages -list", _percent(s["placements_agree"], s["placements_compared"])),
        ("outputs", s["outputs"]),
        ("outputs pixel-equal to poppler or MuPDF", _percent(s["pixel_equal"], s["outputs_checked"])),
        ("outputs different by design (verified)", _percent(s.get("by_design", 0), s["outputs_checked"])),
        ("outputs not matched to a poppler row", s["outputs_unmatched"]),
        ("outputs Pillow cannot open", s["pillow_unreadable"]),
        ("run time (s)", s["seconds"]),
    ]
    print("\n".join(f"{what:<40} {value}" for what, value in lines))
    print(f"\n{'refusal code':<24} {'files':>6} {'policy':>7} {'poppler opens':>14}")
    for code, row in s["refusals"].items():
        print(f"{code:<24} {row['files']:>6} {row['policy']:>7} {row['poppler_opens']:>14}")
    print(f"\n{'intake policy finding':<24} {'files':>6} {'refused':>8} {'flagged':>8} {'accepted':>9}")
    for kind, row in s.get("policy_findings", {}).items():
        print(f"{kind:<24} {row['files']:>6} {row['refused']:>8} {row['flagged']:>8} {row['accepted']:>9}")
    print(f"\n{'disagreement class':<48} {'count':>6}")
    for kind, count in s["classes"][:25]:
        print(f"{kind:<48} {count:>6}")


def write(out: Path, records: list[dict], summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    groups = defaultdict(list)
    for r in records:
        for kind, detail in r["disagreements"]:
            groups[kind].append(f"{r['file']}: {detail}")
    with open(out / "disagreements.md", "w") as f:
        for kind, items in sorted(groups.items(), key=lambda g: -len(g[1])):
            f.write(f"## {kind} ({len(items)})\n\n" + "".join(f"- {item}\n" for item in items) + "\n")
    print(f"\ndetails: {out}/records.jsonl, {out}/disagreements.md")


if __name__ == "__main__":
    raise SystemExit(main())
