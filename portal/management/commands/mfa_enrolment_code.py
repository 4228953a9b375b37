from core.actor import SYSTEM
from portal import enrolment
from portal.management.user_command import UserCommand


class Command(UserCommand):
    help = (
        "Print a one-time enrolment code (valid for a day) with which USERNAME may enrol an authenticator where a "
        "second factor is required: for the first superuser of a deployment, whom no other administrator can issue "
        "one. Whoever runs it has shell access to the deployment, which is more than any administrator has."
    )

    def handle_user(self, user) -> None:
        self.stdout.write(enrolment.issue_code(user, SYSTEM))
