from django.core.management.base import BaseCommand

from audit import log_checkpoints


class Command(BaseCommand):
    help = (
        "Sign a checkpoint of the transparency log now (the schedule does so every PAGETRAIL_CHECKPOINT_EVERY_MINUTES)."
    )

    def handle(self, *args, **options):
        checkpoint = log_checkpoints.write_log_checkpoint()
        latest = checkpoint or log_checkpoints.latest()
        if latest is None:
            self.stdout.write("The log is empty: nothing to sign.")
        else:
            self.stdout.write(
                ("Signed" if checkpoint else "Unchanged since") + f" the checkpoint at {latest.tree_size}."
            )
            self.stdout.write(latest.note)
