"""The benchmark's printed tables: Markdown, so docs/performance.md can quote them as they are."""

import hashlib
import os
import time
from pathlib import Path

from extraction.intake import rules
from extraction.pdf import Limits, Refusal, extract_images, inspect_pdf

from . import hostile, inflaters, runners
from .kinds import summary_rows
from .tables import table

REPEATS = 3


def print_extraction(runs: list, truth: dict) -> dict:
    """The table; returns the seconds of each run that ran, by name."""
    megabytes, floor = truth["totals"]["bytes"] / 1e6, runs[0].seconds
    print(
        "\n### Extraction (every image of every PDF written and hashed; outputs on tmpfs; the fastest of 3 runs, "
        f"or of fewer once {runners.BEST_OF_SECONDS} s are spent)\n"
    )
    rows = []
    for run in runs:
        if run.skipped:
            rows.append([run.name, "skipped: " + run.skipped, "", "", ""])
            continue
        rows.append(
            [
                run.name,
                f"{run.seconds:.2f}",
                f"{megabytes / run.seconds:.0f}",
                f"{run.images / run.seconds:,.0f}" if run.images else "–",
                f"{run.seconds / floor:.1f}",
            ]
        )
    table(["extractor", "wall s", "MB/s", "images/s", "× floor"], rows)
    return {
        "megabytes": megabytes,
        "images": truth["totals"]["distinct_outputs"],
        "seconds": {run.name: run.seconds for run in runs if not run.skipped},
    }


def best_of(action, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def print_hashing(outputs: Path) -> dict:
    """Verification's streamed file hashing against hashlib over the same files read whole, and
    against hashlib over bytes already in memory (no I/O at all: the ceiling)."""
    paths = sorted(p for p in outputs.rglob("*") if p.is_file())
    blobs = [p.read_bytes() for p in paths]
    megabytes = sum(map(len, blobs)) / 1e6
    in_memory = best_of(lambda: [hashlib.sha256(b).digest() for b in blobs])
    whole = best_of(lambda: [hashlib.sha256(p.read_bytes()).digest() for p in paths])
    streamed = best_of(lambda: [_file_digest(p) for p in paths])
    print(
        f"\n### Verification hashing ({len(paths):,} extracted files, {megabytes:.0f} MB, one core, "
        f"best of {REPEATS})\n"
    )
    table(
        ["sha256", "wall s", "MB/s", "× hashlib over files"],
        [
            _hash_row("hashlib over bytes already in memory (no I/O)", in_memory, megabytes, whole),
            _hash_row("hashlib over each file read whole (reference)", whole, megabytes, whole),
            _hash_row("verification: `hashlib.file_digest` over each file", streamed, megabytes, whole),
        ],
    )
    return {"verification_mb_s": megabytes / streamed, "hashlib_mb_s": megabytes / whole}


def _hash_row(name: str, seconds: float, megabytes: float, reference: float) -> list:
    return [name, f"{seconds:.3f}", f"{megabytes / seconds:.0f}", f"{reference / seconds:.2f}"]


def _file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def print_intake(truth: dict, corpus: Path, scratch: Path) -> dict:
    bundle = corpus / next(f["name"] for f in truth["files"] if f["kind"] == "legal")
    out = scratch / "bundle"
    out.mkdir()
    validation = best_of(lambda: inspect_pdf(bundle))
    extraction = best_of(lambda: extract_images(bundle, out))
    pages = next(f["pages"] for f in truth["files"] if f["kind"] == "legal")
    print(f"\n### Intake: validation of the {pages}-page bundle against its extraction (best of {REPEATS})\n")
    table(
        ["step", "wall s", "share of extraction"],
        [
            ["`inspect_pdf` (validation, child process)", f"{validation:.3f}", f"{validation / extraction:.0%}"],
            ["`extract_images` (child process)", f"{extraction:.3f}", "100%"],
        ],
    )
    return {
        "pages": pages,
        "validation_s": validation,
        "extraction_s": extraction,
        "slowest_refusal_s": print_refusals(scratch / "hostile"),
    }


def print_refusals(directory: Path) -> float | None:
    """The table; returns the slowest refusal's seconds (None when the hostile files cannot be made)."""
    directory.mkdir()
    made = hostile.corpus(directory)
    if not made:
        print("\n(hostile files: tests/pdfs.py is not importable; refusal times skipped)")
        return None
    rows = []
    for name, path in made:
        start = time.perf_counter()
        try:  # judged as intake judges it, under the intake policy's defaults
            found = rules.judged(inspect_pdf(path, Limits()).findings, rules.DEFAULTS)
            code = "ACCEPTED" + (", flagged" if any(f["action"] == rules.FLAG for f in found) else "")
        except Refusal as exc:
            code = exc.code
        rows.append([name, code, f"{time.perf_counter() - start:.3f}"])
    print(
        f"\n### Refusal of hostile files (default limits: {Limits().memory_bytes >> 20} MiB, "
        f"{Limits().cpu_seconds} s CPU per child)\n"
    )
    table(["file", "refused as", "wall s"], rows + [["slowest", "", max(r[2] for r in rows)]])
    return max(float(r[2]) for r in rows)


def print_summary(figures: dict) -> None:
    """The targets, each measured figure beside its reference and goal (target 1 per kind of bundle too)."""
    print("\n### Summary: the targets\n")
    rows = _extraction_rows(figures["extraction"]) + summary_rows(figures.get("kinds", {}))
    rows += [inflaters.summary_row(figures.get("inflaters", {}))]
    rows += [_pipeline_row(figures.get("pipeline"))]
    if "pipeline_production" in figures:
        rows += [_pipeline_row(figures["pipeline_production"], "production (PostgreSQL, Redis, S3 on loopback)")]
    rows += [_per_job_row(figures.get(key)) for key in ("per_job", "per_job_production") if key in figures]
    rows += [_hint_cost_row(figures.get("hint_cost"))]
    rows += [_hashing_row(figures["hashing"]), _admin_row(figures.get("admin"))] + _intake_rows(figures["intake"])
    rows += _log_rows(figures.get("log"))
    rows += [_load_row(figures["load"])] if "load" in figures else []
    rows += [_capacity_row(figures.get("per_job_production"), figures.get("load"))]
    table(["target", "measured", "reference (same run)", "ratio", "goal"], rows)


def _seconds(extraction: dict, prefix: str) -> float | None:
    return next((s for name, s in extraction["seconds"].items() if name.startswith(prefix)), None)


def _extraction_rows(extraction: dict) -> list[list]:
    mb, images = extraction["megabytes"], extraction["images"]
    floor = _seconds(extraction, "raw-copy floor")
    assert floor is not None, "the raw-copy floor is measured with every extraction"
    one, two = _seconds(extraction, "Pagetrail, 1 worker ("), _seconds(extraction, "Pagetrail, 2 workers")
    rows = []
    if one:
        rows.append(
            [
                "1. extractor, 1 worker",
                f"{mb / one:.0f} MB/s, {images / one:,.0f} images/s",
                f"raw-copy floor {mb / floor:.0f} MB/s",
                f"{one / floor:.1f}× floor",
                "≥ 200 MB/s, ≥ 1,200 images/s, ≤ 2× floor",
            ]
        )
    if two:
        rows.append(
            [
                "1. extractor, 2 workers",
                f"{mb / two:.0f} MB/s",
                f"raw-copy floor (1 worker) {mb / floor:.0f} MB/s",
                f"{two / floor:.1f}× floor",
                "≥ 400 MB/s",
            ]
        )
    return rows


def _per_job_row(per_job: dict | None) -> list:
    """Issue 36's target 2: a one-image form's job in the cluster (bench/per_job.py)."""
    if not per_job or "median" not in per_job:
        return ["2. a one-image job in the cluster", "not run", "", "", ""]
    median, production = per_job["median"], per_job["profile"] == "production"
    statements = per_job.get("profile_table", {}).get("counts", {}).get("statements")
    measured = f"{median['cluster_cpu_ms']:.1f} ms CPU" + (f", {statements:.0f} statements" if statements else "")
    if production:
        measured += f", {median['s3_requests']:.1f} S3 requests, {median['redis_ops']:.1f} Redis commands"
    floor = per_job.get("floor", {}).get("floor_ms")
    return [
        f"2. a one-image job in the cluster, {per_job['profile']}",
        measured,
        (f"engines' floor at the goal's counts {floor:.1f} ms; " if floor is not None else "")
        + f"intake beyond validation {median['intake_beyond_validation_ms']:.1f} ms a file",
        f"extractor {median['pdf_child_cpu_ms']:.1f} ms"
        + (f"; {median['cluster_cpu_ms'] / floor:.2f}× floor" if floor else ""),
        "≤ 15 ms, ≤ 10 statements, S3 = assets + 1, intake ≤ 5 ms" if production else "≤ 8 ms",
    ]


def _load_row(load: dict) -> list:
    """Issue 36's target 3: throughput and tail latency over the API (bench/load.py)."""
    rate, p95 = load.get("jobs_per_second"), load.get("p95", {})
    if rate is None:
        return ["3. throughput under load", "not run", "", "", ""]
    files = load["files"]
    steps = ", ".join(f"{step} {p95.get('form ' + step, '–')} s" for step in ("queue wait", "extraction"))
    durable = p95.get("form manifest durability", "–")
    return [
        f"3. throughput under load: {files.get('form', 0)} forms, {files.get('bundle', 0)} bundles, 2 worker hosts",
        f"{rate:.2f} jobs/s; forms' p95: {steps}, manifest durability {durable} s",
        f"on {os.cpu_count()} CPUs shared with PostgreSQL, Redis, S3 and the clients",
        "",
        "10,000 forms and 20 bundles; nothing lost, no duplicate, every manifest verifies",
    ]


PEAK_JOBS_PER_SECOND = 350  # ten million bundles a day, three times the mean at the peak (docs/performance.md)


def _capacity_row(per_job: dict | None, load: dict | None) -> list:
    """Issue 36's target 4: the capacity model's worker core, `1000 / (c_job + c_in + c_web)`, from this run's own
    per-job figures (bench/per_job.py on production; the web request's CPU from the load run when it ran)."""
    if not per_job or "median" not in per_job:
        return ["4. capacity model: one worker core", "not run (needs --production)", "", "", ""]
    median = per_job["median"]
    web = (load or {}).get("cpu_ms", {}).get("web")
    per_file = median["cluster_cpu_ms"] + median["intake_cpu_ms"] + (web or 0.0)
    per_core = 1000 / per_file
    reference = "the web request's CPU not measured (add --load)"
    if load and load.get("jobs_per_second"):
        reference = f"the load run: {load['jobs_per_second']:.1f} jobs/s on {os.cpu_count()} shared CPUs"
    return [
        "4. capacity model: one worker core (job, intake" + (", web request)" if web else ")"),
        f"{per_core:.1f} jobs/s a core ({per_file:.1f} ms a job)",
        reference,
        f"{PEAK_JOBS_PER_SECOND * per_file / 1000:.1f} worker cores at {PEAK_JOBS_PER_SECOND} jobs/s",
        "10 million bundles a day (docs/performance.md)",
    ]


def _hint_cost_row(cost: dict | None) -> list:
    """Issue 35: page hints cost a bundle's job nothing; they are read after its manifest (bench/hint_cost.py)."""
    if not cost or cost.get("hints_s") is None:
        return ["page hints: a 240-page bundle's job", "not run", "", "", "≤ 1.0× the job before hints"]
    job = cost["with_extraction_s"] + cost["with_manifest_s"]
    before = cost["without_extraction_s"] + cost["without_manifest_s"]
    return [
        f"page hints: a {cost['pages']}-page bundle's job",
        f"extraction {cost['with_extraction_s']:.3f} s + manifest {cost['with_manifest_s']:.3f} s with hints asked; "
        f"then their reading {cost['hints_s']:.2f} s on the previews queue",
        f"before hints (not asked): {cost['without_extraction_s']:.3f} s + {cost['without_manifest_s']:.3f} s",
        f"{job / before:.2f}× before",
        "≤ 1.0× the job before hints (noise aside); hints after the manifest",
    ]


def _hashing_row(hashing: dict) -> list:
    return [
        "3. verification hashing, 1 worker",
        f"{hashing['verification_mb_s']:.0f} MB/s",
        f"hashlib {hashing['hashlib_mb_s']:.0f} MB/s",
        f"{hashing['verification_mb_s'] / hashing['hashlib_mb_s']:.2f}× hashlib",
        "≥ 800 MB/s, ≥ 0.70×",
    ]


def _pipeline_row(pipeline: dict | None, label: str = "embedded") -> list:
    if not pipeline or "pipeline_s" not in pipeline:
        return [f"2. pipeline, {label}", "not run", "", "", "≤ 2× the design floor"]
    queries = (
        f"; queries per job {pipeline['queries'][0]} → {pipeline['queries'][1]} for "
        f"{pipeline['assets'][0]} → {pipeline['assets'][1]} assets"
    )
    if None not in pipeline.get("s3_requests", [None]):
        queries += f"; S3 requests per job {pipeline['s3_requests'][0]} → {pipeline['s3_requests'][1]}"
    return [
        f"2. pipeline, {pipeline['workers']} workers, {label}",
        f"{pipeline['pipeline_s']:.2f} s{queries}",
        f"design floor {pipeline['floor_s']:.2f} s (extractor alone {pipeline['extractor_s']:.2f} s)",
        f"{pipeline['pipeline_s'] / pipeline['floor_s']:.2f}× floor",
        "≤ 2× floor; queries constant in assets",
    ]


def _log_rows(log: dict | None) -> list[list]:
    """The ledger's proofs at its largest size measured, each beside a rebuild from every leaf."""
    if not log or not log.get("rows"):
        return [["ledger proofs", "not run", "", "", "milliseconds, a handful of queries"]]
    largest = max(r["size"] for r in log["rows"])
    return [
        [
            f"ledger {r['proof']}, {largest:,} leaves",
            f"{r['stored_ms']:.1f} ms, {r['stored_queries']} quer{'y' if r['stored_queries'] == 1 else 'ies'}",
            f"rebuild from every leaf {r['rebuilt_ms']:,.0f} ms",
            f"{r['ratio']:,.0f}× faster",
            "milliseconds, a handful of queries",
        ]
        for r in log["rows"]
        if r["size"] == largest
    ]


def _admin_row(admin: dict | None) -> list:
    if not admin or "pages" not in admin:
        return ["4. admin at scale", "not run", "", "", "constant queries; median render time"]
    constant = "constant queries" if not admin["failures"] else "NOT constant (see above)"
    return [
        f"4. admin, {admin['jobs']:,} jobs, {admin['assets']:,} assets",
        f"{admin['pages']} pages: {constant}; median of medians {admin['median_ms']:.0f} ms",
        "the same pages on 200 jobs",
        f"slowest {admin['slowest']} {admin['slowest_ms']:.0f} ms",
        "constant queries; report median render",
    ]


def _intake_rows(intake: dict) -> list[list]:
    slowest = intake["slowest_refusal_s"]
    return [
        [
            "5. hostile files refused",
            "not run" if slowest is None else f"slowest {slowest:.2f} s",
            "",
            "",
            "each < 2 s, memory within the child's limit",
        ],
        [
            f"5. validation of the {intake['pages']}-page bundle",
            f"{intake['validation_s']:.3f} s",
            f"its extraction {intake['extraction_s']:.3f} s",
            f"{intake['validation_s'] / intake['extraction_s']:.0%}",
            "< 10%",
        ],
    ]
