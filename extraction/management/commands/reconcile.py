import json

from django.core.management.base import BaseCommand

from extraction.reconciler import reconcile


class Command(BaseCommand):
    help = "Wake jobs whose claim expired or whose queue task was lost (the scheduled reconciler, once)."

    def handle(self, *args, **options):
        self.stdout.write(json.dumps(reconcile()))
