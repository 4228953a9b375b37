"""The intake policy in force: per kind of finding (extraction/pdf/findings.py), refuse the file, accept it with a
review flag naming what was found and where, or accept it (the rules: rules.py; the defaults and why:
docs/pipeline.md); its versions are policy_versions.py's."""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from extraction import pdf
from extraction.pdf.findings import KINDS

from . import rules
from .policy_versions import IntakePolicy
from .rules import ACCEPT, CODES, DEFAULTS, FLAG, REFUSE, where

__all__ = ["ACCEPT", "CODES", "DEFAULTS", "FLAG", "KINDS", "REFUSE", "Verdict", "configured_rules", "judge", "where"]


def configured_rules(text: str | None = None) -> dict[str, str]:
    """The defaults with PAGETRAIL_INTAKE_POLICY's changes ("javascript=refuse,submit_form=accept,...")."""
    try:
        return rules.parsed(settings.PAGETRAIL_INTAKE_POLICY if text is None else text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"PAGETRAIL_INTAKE_POLICY: {exc}") from None


def in_force(at=None) -> IntakePolicy:
    """The version of the configured rules (a new version when they changed)."""
    return IntakePolicy.for_rules(configured_rules(), at)


@dataclass(frozen=True)
class Verdict:
    """What the policy made of an accepted file: each finding with its action, and the attachments it let in."""

    policy: IntakePolicy
    found: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)


def judge(inspection: pdf.Inspection, policy: IntakePolicy) -> Verdict:
    """Raise `pdf.Refusal` for the gravest finding the policy refuses, else the verdict."""
    found = rules.judged(inspection.findings, policy.rules, policy.version)
    return Verdict(policy=policy, found=found, attachments=list(inspection.attachments))
