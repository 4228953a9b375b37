from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.actor import SYSTEM
from portal import enrolment


class Command(BaseCommand):
    help = (
        "Print a one-time enrolment code (valid for a day) with which USERNAME may enrol an authenticator where a "
        "second factor is required: for the first superuser of a deployment, whom no other administrator can issue "
        "one. Whoever runs it has shell access to the deployment, which is more than any administrator has."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        self.stdout.write(enrolment.issue_code(user, SYSTEM))
