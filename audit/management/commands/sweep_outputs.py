import json

from django.core.management.base import BaseCommand

from audit.retention.output_sweep import sweep_outputs


class Command(BaseCommand):
    help = (
        "Delete stored outputs no manifest names, for jobs that reached a terminal state (a try that failed "
        "after storing assets, or wrote its manifest and lost its commit). The schedule does this every minute."
    )

    def handle(self, *args, **options):
        self.stdout.write(json.dumps(sweep_outputs()))
