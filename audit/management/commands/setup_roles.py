from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand

from audit.operations.roles import ensure_roles


class Command(BaseCommand):
    help = (
        "Create or repair the role groups (Compliance staff, Reviewer, Retention admin, Submitter) "
        "with exactly their permissions."
    )

    def handle(self, *args, **options):
        for name, count in ensure_roles(Group, Permission).items():
            self.stdout.write(f"{name}: {count} permissions")
