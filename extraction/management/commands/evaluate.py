import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from extraction.evaluation import evaluate, table


class Command(BaseCommand):
    help = (
        "Run one corpus through the self-hosted and the managed provider with the same concurrency, in "
        "scratch deployments, and print queue wait, extraction time, retries, peak temp bytes, manifest "
        "write latency and jobs needing review per provider; fails if a check fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, type=Path, help="a directory of PDFs (searched recursively)")
        parser.add_argument("--concurrency", type=int, default=2, help="worker processes per provider")
        parser.add_argument("--providers", default="local,infrai")
        parser.add_argument("--json", type=Path, help="also write the figures to this file")
        parser.add_argument("--timeout", type=float, default=1800)

    def handle(self, *args, **options):
        providers = [p.strip() for p in options["providers"].split(",") if p.strip()]
        try:
            results = evaluate(options["corpus"], options["concurrency"], providers, options["timeout"])
        except (ValueError, RuntimeError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(table(results))
        if options["json"]:
            options["json"].write_text(json.dumps(results, indent=2))
        failed = [f"{name}: {check}" for name, r in results.items() for check, ok in r["checks"].items() if not ok]
        if failed:
            raise CommandError("checks failed: " + "; ".join(failed))
