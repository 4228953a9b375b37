from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = (
        "Remove a user's authenticator (a lost phone): they log in with their password and enrol a new one "
        "at /account/two-factor/. For when no superuser can delete it under 'TOTP devices'."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        removed, _ = TOTPDevice.objects.filter(user=user).delete()
        self.stdout.write(f"Removed {removed} authenticator(s) of {username}: they enrol again at their next login.")
