"""Where a job's CPU goes in the cluster: the profiles core/profiling.py writes, summed by process and by part."""

import pstats
from collections import Counter
from pathlib import Path

from .tables import table

# (part, markers in a function's file name or a built-in's name), first match wins; a built-in's time is its
# caller's part (a socket send is the S3 client's when botocore calls it).
PARTS = [
    ("extractor (parent side of the PDF child)", ("extraction/pdf/",)),
    (
        "S3 client (boto3, botocore, s3transfer, urllib3, django-storages)",
        ("botocore", "boto3", "s3transfer", "urllib3", "storages/"),
    ),
    ("broker (django-q2, the Redis client, task pickling)", ("django_q/", "/redis/", "pickle")),
    ("ORM and database driver", ("django/db/", "psycopg", "sqlite3")),
    ("signing (manifest, ledger)", ("audit/ledger/signing", "cryptography", "nacl", "_hashlib")),
    ("logging", ("logging/", "core/logs")),
    ("Django (settings, signals, storages handler, utils)", ("django/",)),
    ("Pagetrail's own code", ("/extraction/", "/audit/", "/core/", "/portal/")),
]
OTHER = "the rest (standard library)"
ROLES = (("worker", "django_q/worker.py"), ("pusher", "django_q/pusher.py"), ("monitor", "django_q/monitor.py"))
# Counted calls: (name, file marker, function names).
COUNTED = {
    "statements": ("django/db/backends/utils.py", ("_execute", "_executemany")),
    "redis_commands": ("redis/client.py", ("_execute_command",)),
    "s3_requests": ("botocore/endpoint.py", ("_send",)),
    "django_storages_objects_built": ("storages/backends/s3.py", ("__init__",)),
    "boto3_clients_built": ("boto3/session.py", ("client",)),
    "log_records": ("logging/__init__.py", ("makeRecord",)),
}
# Cumulative CPU of named steps (a call inside another is counted in both).
STEPS = {
    "run_job (the task)": ("extraction/runner.py", ("run_job",)),
    "complete_job (the completion transaction and its evidence)": ("extraction/completion.py", ("complete_job",)),
    "the manifest signed": ("audit/ledger/signing.py", ("sign", "signed")),
    "django-storages objects built (S3Storage, S3File)": ("storages/backends/s3.py", ("__init__",)),
    "boto3 clients built": ("boto3/session.py", ("client",)),
    "the PDF child's round trip (parent side)": ("extraction/pdf/sandbox.py", ("run_child",)),
    "log records handled": ("logging/__init__.py", ("handle",)),
}


def part_of(key: tuple) -> str:
    filename, _, name = key
    text = filename if filename != "~" else name
    for part, markers in PARTS:
        if any(marker in text for marker in markers):
            return part
    return OTHER


def profile_summary(directory: Path, jobs: int) -> dict:
    """ms a job by part and by process role, counts a job, and the named steps' cumulative ms a job."""
    parts, roles, counts, steps = Counter[str](), Counter[str](), Counter[str](), Counter[str]()
    for path in sorted(directory.glob("*.prof")):
        stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        role = next((r for r, marker in ROLES if any(marker in k[0] and k[2] == r for k in stats)), "master/sentinel")
        for key, (_, calls, own, cumulative, callers) in stats.items():
            roles[role] += own
            if key[0] == "~" and callers:
                for caller, entry in callers.items():  # a built-in's time goes to the part of who called it
                    parts[part_of(caller) if part_of(key) == OTHER else part_of(key)] += entry[2]
            else:
                parts[part_of(key)] += own
            for name, (marker, functions) in COUNTED.items():
                if marker in key[0] and key[2] in functions:
                    counts[name] += calls
                    if name == "statements":
                        counts[f"statements in the {role}"] += calls
            for name, (marker, functions) in STEPS.items():
                if marker in key[0] and key[2] in functions:
                    steps[name] += cumulative
    per_job = 1000 / max(jobs, 1)
    return {
        "parts": {k: v * per_job for k, v in parts.most_common()},
        "roles": {k: v * per_job for k, v in roles.most_common()},
        "counts": {k: counts[k] / max(jobs, 1) for k in [*COUNTED, *sorted(c for c in counts if " in the " in c)]},
        "steps": {k: steps[k] * per_job for k in STEPS},
    }


def print_profile(summary: dict, profile: str) -> None:
    total = sum(summary["parts"].values())
    print(
        f"\n### Where a job's cluster CPU goes, {profile} profile (one batch under cProfile, which inflates every "
        f"figure: {total:.1f} ms a job profiled; the idle cluster's polls included)\n"
    )
    table(
        ["part (exclusive CPU)", "ms a job", "share"],
        [[part, f"{ms:.2f}", f"{ms / total:.0%}"] for part, ms in summary["parts"].items()],
    )
    print()
    table(["process", "ms a job"], [[role, f"{ms:.2f}"] for role, ms in summary["roles"].items()])
    print()
    table(["step (cumulative CPU)", "ms a job"], [[step, f"{ms:.2f}"] for step, ms in summary["steps"].items()])
    print("\ncalls a job: " + ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in summary["counts"].items()))
