from core.actor import SYSTEM
from portal import enrolment
from portal.management.user_command import UserCommand


class Command(UserCommand):
    help = (
        "Remove a user's authenticator and recovery codes (a lost phone): they enrol a new one at /account/two-factor/ "
        "(with an enrolment code where one is needed: mfa_enrolment_code). For when no other superuser can reset it."
    )

    def handle_user(self, user) -> None:
        removed = enrolment.reset_devices(user, SYSTEM)
        name = user.get_username()
        self.stdout.write(f"Removed {removed} second-factor device(s) of {name}: they enrol again at their next login.")
