from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.actor import SYSTEM
from portal import enrolment


class Command(BaseCommand):
    help = (
        "Remove a user's authenticator and recovery codes (a lost phone): they enrol a new one at /account/two-factor/ "
        "(with an enrolment code where one is needed: mfa_enrolment_code). For when no other superuser can reset it."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        removed = enrolment.reset_devices(user, SYSTEM)
        self.stdout.write(
            f"Removed {removed} second-factor device(s) of {username}: they enrol again at their next login."
        )
