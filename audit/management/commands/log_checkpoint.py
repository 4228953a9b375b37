from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing, store_witness
from audit.verifier import notes


class Command(BaseCommand):
    help = (
        "Sign a checkpoint of the transparency log now (the schedule does so every PAGETRAIL_CHECKPOINT_EVERY_MINUTES)."
    )

    def handle(self, *args, **options):
        try:
            checkpoint = log_checkpoints.write_log_checkpoint()
        except store_witness.LedgerRollback as exc:  # a restored database: recover first (docs/operations.md)
            raise CommandError(exc.message) from exc
        latest = checkpoint or log_checkpoints.latest()
        if latest is None:
            self.stdout.write("The log is empty: nothing to sign.")
        else:
            self.stdout.write(
                ("Signed" if checkpoint else "Unchanged since") + f" the checkpoint at {latest.tree_size}."
            )
            self.stdout.write(latest.note)
        origin, public = settings.PAGETRAIL_LOG_ORIGIN, signing.private_key().public_key().public_bytes_raw()
        self.stdout.write(f"Note verifier key (for C2SP and Go sumdb note tools): {notes.verifier_key(origin, public)}")
