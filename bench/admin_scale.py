"""Admin at scale: with 100k jobs and 1M assets loaded, do the admin pages stay constant in queries?

    python -m bench.admin_scale [--jobs 100000] [--assets 1000000] [--data var/bench/admin] [--renders 15]

Loads synthetic evidence once into a database of its own (bench/admin_load.py; the embedded SQLite
profile under --data, or DATABASE_URL's database when that is set), then renders as a superuser:
every admin changelist of the extraction and audit apps, page 2 and a search of the Job and Asset
changelists, a search by file name and a case label with a date range on the Job, Manifest and Asset
changelists, the change pages of a job, a manifest and an asset, the review page of a completed
job and the operations dashboard. Per page it reports the queries of one render and the median
and max of --renders timed renders.

The same pages are rendered against a small database first (a subprocess, --small-jobs and
--small-assets under --small-data): a page whose query count differs between the two sizes does
work per row or per object, and is reported NOT constant. Exits 1 when a page is not constant or
does not answer 200. Never a pass/fail on time: those figures are for reading.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW_MS = 2000  # pages slower than this get their slowest query printed
SHOWN_SQL = 400  # characters of a query printed


def configure(data_dir: Path) -> None:
    """This process's own data dir (so its own SQLite database), before Django reads any setting."""
    os.environ["PAGETRAIL_DATA_DIR"] = str(data_dir.resolve())
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def run(jobs: int, assets: int, data_dir: Path, renders: int) -> list[dict]:
    """Load (once) and measure every page; one dict per page, in the table's order."""
    configure(data_dir)
    from bench.admin_load import ensure_loaded, say

    ensure_loaded(jobs, assets)
    client = logged_in_client()
    results = []
    for name, url in pages():
        results.append(measure(client, name, url, renders) if url else {"page": name, "skipped": True})
        say(f"  {name}: {describe(results[-1])}")
    return results


def logged_in_client():
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    User = get_user_model()
    user = User.objects.filter(username="bench-admin").first() or User.objects.create_superuser(
        "bench-admin", "bench@localhost", None
    )
    # The test client's default host, "testserver", is not in ALLOWED_HOSTS: use one that is.
    host = next((h for h in settings.ALLOWED_HOSTS if h and h[0] not in ".*"), "localhost")
    client = Client(HTTP_HOST=host, secure=getattr(settings, "SECURE_SSL_REDIRECT", False))
    client.force_login(user)
    return client


def pages() -> list[tuple[str, str | None]]:
    """(name, url) of every page measured; url None for a page whose admin is not registered."""
    from urllib.parse import quote

    from django.contrib import admin
    from django.db.models import Model
    from django.urls import reverse

    from audit.models import Asset, Manifest
    from bench.admin_load import SHOWCASE
    from extraction.models import Job

    # The showcase has the same shape at every size; a database loaded otherwise: its newest manifest.
    manifests = Manifest.objects.select_related("job__bundle")
    manifest = manifests.filter(job__bundle__case_label=SHOWCASE).first() or manifests.order_by("-sequence").first()
    assert manifest is not None, "load the database first (bench.admin_load)"
    registered = {m for m in admin.site._registry if m._meta.app_label in ("extraction", "audit")}

    def admin_url(model, view: str, *args, query: str = "") -> str | None:
        return (
            reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args) + query
            if model in registered
            else None
        )

    found = [
        (f"changelist {m._meta.label_lower}", admin_url(m, "changelist"))
        for m in sorted(registered, key=lambda m: m._meta.label_lower)
    ]
    for model in (Job, Asset):  # the two tables with the most rows: later pages and a search
        found += [
            (f"changelist {model._meta.label_lower} page 2", admin_url(model, "changelist", query="?p=1")),
            (
                f"search {model._meta.label_lower}",
                admin_url(model, "changelist", query=f"?q={manifest.correlation_id}"),
            ),
        ]
    # An export streams every row of the filtered list: its queries must not grow with them either.
    found.append(("export csv extraction.job", admin_url(Job, "export", "csv")))
    # As people search and filter: part of a file name, and a case label within a date range of their own.
    file_name = quote(manifest.job.bundle.original_filename[:-4])
    searched: list[tuple[type[Model], str]] = [(Job, "enqueued_at"), (Manifest, "created_at"), (Asset, "created_at")]
    for listed, since in searched:
        found += [
            (f"search by name {listed._meta.label_lower}", admin_url(listed, "changelist", query=f"?q={file_name}")),
            (
                f"case label and dates {listed._meta.label_lower}",
                admin_url(listed, "changelist", query=f"?case_label={quote(SHOWCASE)}&{since}__from=2000-01-01"),
            ),
        ]
    showcase_asset = manifest.assets.order_by("page", "index_on_page").first()
    assert showcase_asset is not None, "a manifest of the load has assets"
    shown: list[tuple[type[Model], Model]] = [(Job, manifest.job), (Manifest, manifest), (Asset, showcase_asset)]
    for shown_model, obj in shown:
        found.append((f"change {shown_model._meta.label_lower}", admin_url(shown_model, "change", obj.pk)))
    review = f"review page ({manifest.page_count} pages, {manifest.assets.count()} assets)"
    return found + [(review, reverse("review-manifest", args=[manifest.pk])), ("dashboard", reverse("dashboard"))]


def measure(client, name: str, url: str, renders: int) -> dict:
    """One warm-up render (templates, caches, lazily created rows), one counted, then `renders` timed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fetch(client, url)
    with CaptureQueriesContext(connection) as counted:
        status = fetch(client, url)
    queries = counted.captured_queries  # a copy: the next request empties the connection's log
    times = []
    for _ in range(renders):
        started = time.perf_counter()
        fetch(client, url)
        times.append((time.perf_counter() - started) * 1000)
    slowest = max(queries, key=lambda q: float(q["time"]), default={"time": "0", "sql": ""})
    repeated = Counter(shape(q["sql"]) for q in queries).most_common(1)
    return {
        "page": name,
        "url": url,
        "status": status,
        "queries": len(queries),
        "median_ms": statistics.median(times),
        "max_ms": max(times),
        "slowest_query_ms": float(slowest["time"]) * 1000,
        "slowest_query": slowest["sql"],
        "most_repeated": {"count": repeated[0][1], "sql": repeated[0][0]} if repeated else None,
    }


def fetch(client, url: str) -> int:
    """One whole answer: a streamed one (a list's export) is read to its end, as its queries run only then."""
    response = client.get(url)
    for _ in getattr(response, "streaming_content", ()):
        pass
    return response.status_code


def shape(sql: str) -> str:
    """A query with its literals blanked: N+1 queries differ only in the id they ask for."""
    return re.sub(r"'[^']*'|\b\d+\b", "?", sql)


def describe(result: dict) -> str:
    if result.get("skipped"):
        return "skipped: its model has no admin"
    return f"{result['status']}, {result['queries']} queries, median {result['median_ms']:.0f} ms"


def measure_small(options) -> dict[str, dict]:
    """The same pages against the small database, in a process of its own (Django sets up once)."""
    env = dict(os.environ)
    if options.small_database_url:
        env["DATABASE_URL"] = options.small_database_url
    elif env.pop("DATABASE_URL", None):
        print("note: the small run uses the embedded SQLite profile (no --small-database-url)", file=sys.stderr)
    command = [
        sys.executable,
        "-m",
        "bench.admin_scale",
        "--json",
        "--jobs",
        str(options.small_jobs),
        "--assets",
        str(options.small_assets),
        "--data",
        str(options.small_data),
        "--renders",
        "1",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return {r["page"]: r for r in json.loads(done.stdout.strip().splitlines()[-1])}  # the JSON is the last line


def problems(large: list[dict], small: dict[str, dict]) -> list[str]:
    found = []
    for r in large:
        before = small.get(r["page"], {})
        if r.get("skipped"):
            continue
        if r["status"] != 200 or before.get("status") != 200:
            found.append(f"{r['page']}: status {before.get('status')} small, {r['status']} large")
        if r["queries"] != before.get("queries"):
            repeated = r["most_repeated"] or {"count": 0, "sql": ""}
            found.append(
                f"{r['page']}: NOT constant, {before.get('queries')} queries small, {r['queries']} large; "
                f"most repeated ({repeated['count']}x): {repeated['sql'][:SHOWN_SQL]}"
            )
    return found


def print_table(large: list[dict], small: dict[str, dict], options) -> None:
    headers = [
        "page",
        f"queries @ {options.small_jobs:,} jobs",
        f"queries @ {options.jobs:,} jobs",
        "median ms",
        "max ms",
        "status",
    ]
    rows = []
    for r in large:
        if r.get("skipped"):
            rows.append([r["page"], "-", "-", "-", "-", "no admin"])
            continue
        before = small.get(r["page"], {}).get("queries")
        flag = "" if before == r["queries"] else "  NOT constant"
        rows.append(
            [
                r["page"],
                str(before),
                f"{r['queries']}{flag}",
                f"{r['median_ms']:.0f}",
                f"{r['max_ms']:.0f}",
                str(r["status"]),
            ]
        )
    widths = [max(len(row[k]) for row in [headers] + rows) for k in range(len(headers))]
    for row in [headers, ["-" * w for w in widths]] + rows:
        print(" | ".join(cell.ljust(w) if k == 0 else cell.rjust(w) for k, (cell, w) in enumerate(zip(row, widths))))
    if skipped := [r["page"] for r in large if r.get("skipped")]:
        print(f"\nnot measured, their model has no ModelAdmin registered: {', '.join(skipped)}")
    for r in large:
        if not r.get("skipped") and r["median_ms"] > SLOW_MS:
            print(
                f"\nslow: {r['page']} (median {r['median_ms']:.0f} ms); slowest query "
                f"{r['slowest_query_ms']:.0f} ms: {r['slowest_query'][:SHOWN_SQL]}"
            )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.admin_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--assets", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("var/bench/admin"), help="the large run's data dir")
    parser.add_argument("--renders", type=int, default=15, help="timed renders per page")
    parser.add_argument("--small-jobs", type=int, default=200)
    parser.add_argument("--small-assets", type=int, default=2_000)
    parser.add_argument("--small-data", type=Path, help="the small run's data dir (default: <data>-small)")
    parser.add_argument("--small-database-url", default="", help="the small run's database when DATABASE_URL is set")
    parser.add_argument("--json", action="store_true", help="measure only, print the results as JSON (internal)")
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    options = parser.parse_args(argv)
    if options.renders < 1:
        parser.error("--renders must be at least 1")
    options.data = options.data.resolve()  # the small run's subprocess starts elsewhere
    options.small_data = (options.small_data or options.data.with_name(options.data.name + "-small")).resolve()
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    if options.json:
        print(json.dumps(run(options.jobs, options.assets, options.data, options.renders)))
        return 0
    print(f"small database: {options.small_jobs:,} jobs, {options.small_assets:,} assets", file=sys.stderr)
    small = measure_small(options)
    print(f"large database: {options.jobs:,} jobs, {options.assets:,} assets", file=sys.stderr)
    large = run(options.jobs, options.assets, options.data, options.renders)
    print_table(large, small, options)
    found = problems(large, small)
    print("\nchecks: " + ("constant queries, every page 200" if not found else "FAILED\n  " + "\n  ".join(found)))
    if options.summary:
        measured = [r for r in large if not r.get("skipped")]
        options.summary.write_text(
            json.dumps(
                {
                    "jobs": options.jobs,
                    "assets": options.assets,
                    "pages": len(measured),
                    "failures": found,
                    "median_ms": statistics.median(r["median_ms"] for r in measured),
                    "slowest": max(measured, key=lambda r: r["median_ms"])["page"],
                    "slowest_ms": max(r["median_ms"] for r in measured),
                }
            )
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
