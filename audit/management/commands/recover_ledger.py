import json

from django.core.management.base import BaseCommand, CommandError

from audit.ledger import recovery as ledger_recovery


class Command(BaseCommand):
    help = (
        "Re-import the ledger positions the output store holds past the database (after a restore or lost "
        "transactions: alert ledger_rollback), each checked against its leaf, its signature and the stored "
        "checkpoints. Without --apply it only checks and lists them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--apply", action="store_true", help="Re-import them (one transaction, all or none).")
        parser.add_argument("--by", default="operator", help="Who recovers (recorded with each record).")

    def handle(self, *args, apply=False, by="operator", **options):
        try:
            found = ledger_recovery.recover(by, apply=apply)
        except ledger_recovery.RecoveryRefused as exc:
            raise CommandError(f"Nothing was re-imported: {exc}") from exc
        self.stdout.write(json.dumps({"applied": apply, "positions": found}, indent=1, sort_keys=True))
