"""The IntakePolicy model: each version of the intake policy (what is refused, flagged or accepted), kept for ever.

The rules come from PAGETRAIL_INTAKE_POLICY over the documented defaults (policy.py). The first decision
that meets rules other than the newest version's writes them down as the next version, with an
`intake_policy_changed` event in the activity record (through extraction's `activity` signal, in the same
transaction); every bundle names the version that accepted it, and so does its manifest.
"""

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from extraction.signals import activity

# Who changes the policy: whoever sets the deployment's environment; the event names the variable.
ACTOR = "PAGETRAIL_INTAKE_POLICY"


class IntakePolicy(models.Model):
    """One version of the intake policy: per kind of finding, `refuse`, `flag` or `accept`."""

    version = models.PositiveIntegerField(unique=True)
    rules = models.JSONField(help_text="Per kind of finding: refuse, flag or accept")
    created_at = models.DateTimeField(default=timezone.now)

    activity_type = "intake_policy"

    class Meta:
        ordering = ["-version"]
        verbose_name_plural = "intake policies"

    def __str__(self):
        return f"intake policy v{self.version}"

    @classmethod
    def for_rules(cls, rules: dict[str, str], at=None) -> "IntakePolicy":
        """The newest version when it has these rules, else the next version with them.

        Two workers meeting a change at once both try the next number; the loser reads the winner's row."""
        newest = cls.objects.order_by("-version").first()
        if newest is not None and newest.rules == rules:
            return newest
        try:
            with transaction.atomic():
                policy = cls.objects.create(
                    version=(newest.version + 1) if newest else 1, rules=rules, created_at=at or timezone.now()
                )
                # In the same transaction: a version exists only with its activity record.
                activity.send(
                    cls,
                    actor=ACTOR,
                    action="intake_policy_changed",
                    obj=policy,
                    before={"version": newest.version, "rules": _said(newest.rules)} if newest else None,
                    after={"version": policy.version, "rules": _said(rules)},
                )
        except IntegrityError:
            return cls.for_rules(rules, at)
        return policy


def _said(rules: dict) -> str:
    """As the activity record shows it to a person: "javascript=refuse, launch=refuse, ...", not a dict."""
    return ", ".join(f"{kind}={action}" for kind, action in rules.items())
