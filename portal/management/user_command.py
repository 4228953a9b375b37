"""A command about one user named on its command line (the second-factor commands)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError


class UserCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        self.handle_user(user)

    def handle_user(self, user: AbstractBaseUser) -> None:
        raise NotImplementedError
