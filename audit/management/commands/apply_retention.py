import json

from django.core.management.base import BaseCommand, CommandError

from audit.ledger.store_witness import LedgerRollback
from audit.retention.enforcement import apply_retention


class Command(BaseCommand):
    help = "Delete inputs, outputs and manifest files whose retention window ended (legal hold blocks and is recorded)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what would be deleted; delete nothing")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        try:
            report = apply_retention(dry_run=options["dry_run"])
        except LedgerRollback as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for entry in report:
            self.stdout.write(
                f"{entry['outcome']}: {entry['what']} of bundle {entry['bundle'][:16]} "
                f"(manifest {entry['manifest']}) under {entry['policy']}{_why(entry)}"
            )
        prefix = "would act on" if options["dry_run"] else "acted on"
        self.stdout.write(f"{prefix} {len(report)} item(s)")


def _why(entry: dict) -> str:
    if "postponed_because" in entry:
        return f": {entry['postponed_because']}"
    return ", left a delete marker (the versions stay)" if entry.get("deletion") == "delete_marker" else ""
