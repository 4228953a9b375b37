import json

from django.core.management.base import BaseCommand

from extraction.temp_sweep import sweep_temp


class Command(BaseCommand):
    help = "Delete temp files of terminal jobs, of jobs the database does not know, and stale uploads."

    def handle(self, *args, **options):
        self.stdout.write(json.dumps(sweep_temp()))
