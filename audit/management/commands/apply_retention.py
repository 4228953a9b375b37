import json

from django.core.management.base import BaseCommand, CommandError

from audit.ledger.store_witness import LedgerRollback
from audit.retention.enforcement import apply_retention
from extraction.models import Bundle

# What each outcome says, done and in a dry run: a dry run deletes nothing and must not read as if it had.
SAID = {
    "deleted": ("deleted", "would delete"),
    "blocked_by_legal_hold": ("blocked by the legal hold", "would be blocked by the legal hold"),
    "postponed_by_object_lock": ("postponed by the object lock", "would be postponed by the object lock"),
}
SHOWN_HASH = 16  # enough to find the bundle by its correlation id in any list of the portal


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
        names = _names({entry["bundle"] for entry in report})
        for entry in report:
            said = SAID.get(entry["outcome"], (entry["outcome"], entry["outcome"]))[options["dry_run"]]
            self.stdout.write(
                f"{said}: {entry['what']} of {_bundle(entry, names)} under {entry['policy']}{_why(entry)}"
            )
        prefix = "would act on" if options["dry_run"] else "acted on"
        self.stdout.write(f"{prefix} {len(report)} item(s)")


def _names(correlation_ids: set[str]) -> dict[str, tuple[str, str]]:
    """File name and case label of each bundle in the report, in one query."""
    rows = Bundle.objects.filter(correlation_id__in=correlation_ids)
    return {
        b.correlation_id: (b.file_name, b.case_label)
        for b in rows.only("correlation_id", "original_filename", "case_label")
    }


def _bundle(entry: dict, names: dict[str, tuple[str, str]]) -> str:
    """The bundle by its name first (and case), then the hash that finds it: `claim.pdf (case claim-1042; bundle
    64c5bc…, manifest 3)`."""
    correlation_id = entry["bundle"]
    file_name, case_label = names.get(correlation_id, (f"bundle {correlation_id[:SHOWN_HASH]}", ""))
    case = f"case {case_label}; " if case_label else ""
    manifest = f", manifest {entry['manifest']}" if entry["manifest"] is not None else ""
    return f"{file_name} ({case}bundle {correlation_id[:SHOWN_HASH]}{manifest})"


def _why(entry: dict) -> str:
    if "postponed_because" in entry:
        return f": {entry['postponed_because']}"
    return ", left a delete marker (the versions stay)" if entry.get("deletion") == "delete_marker" else ""
