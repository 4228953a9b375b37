"""The intake policy's rules as plain data, and their judgement of what inspection found: Django-free, so the
fidelity harness judges a corpus exactly as intake does (the versions and settings are policy.py's)."""

from typing import Any

from extraction.pdf import Refusal
from extraction.pdf.findings import KINDS

REFUSE, FLAG, ACCEPT = "refuse", "flag", "accept"
ACTIONS = (REFUSE, FLAG, ACCEPT)
# Why each default is what it is: docs/pipeline.md, the intake policy's table.
DEFAULTS = {
    "javascript": REFUSE,
    "launch": REFUSE,
    "executable": REFUSE,
    "submit_form": FLAG,
    "import_data": REFUSE,
    "remote_goto": FLAG,
    "uri": ACCEPT,
    "embedded_file": FLAG,
    "rich_media": REFUSE,
    "xfa_form": REFUSE,
    "trailing_data": FLAG,
    "owner_password": ACCEPT,
    "repaired": FLAG,
}
# The refusal code of each kind; the active kinds keep the code they were refused under before there was a policy.
CODES = {"trailing_data": "trailing_data", "owner_password": "encrypted", "repaired": "damaged"}
ACTIVE_CODE = "active_content"


def parsed(text: str) -> dict[str, str]:
    """The defaults with the changes "javascript=refuse,submit_form=accept,..."; ValueError names a wrong one."""
    rules = dict(DEFAULTS)
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, action = (s.strip() for s in item.partition("="))
        if kind not in KINDS:
            raise ValueError(f"{kind!r} is no kind of finding; kinds: {', '.join(KINDS)}.")
        if action not in ACTIONS:
            raise ValueError(f"{kind} is given the action {action!r}; actions: {', '.join(ACTIONS)}.")
        rules[kind] = action
    return rules


def judged(findings: list[dict[str, Any]], rules: dict[str, str], version: int | None = None) -> list[dict[str, Any]]:
    """Each finding with its action, gravest kind first (KINDS' order); raises `Refusal` for the first refused."""
    found = sorted(
        ({**f, "action": rules.get(f["kind"], REFUSE)} for f in findings), key=lambda f: list(KINDS).index(f["kind"])
    )
    for finding in found:
        if finding["action"] == REFUSE:
            raise refusal(finding, version)
    return found


def refusal(finding: dict[str, Any], version: int | None) -> Refusal:
    """The refusal of a finding, e.g. "The PDF contains JavaScript (object 1 0), which the intake policy (version 3)
    refuses." """
    policy = "the intake policy" + (f" (version {version})" if version is not None else "")
    if finding.get("detail"):
        what = finding["detail"].rstrip(".")
    elif finding["objects"]:
        what = f"The PDF contains {finding['what']} ({where(finding)})"
    else:
        what = f"The PDF contains {finding['what']}"
    return Refusal(CODES.get(finding["kind"], ACTIVE_CODE), f"{what}, which {policy} refuses.")


def where(finding: dict[str, Any]) -> str:
    """Where a finding was, for a person: "object 17 0", "objects 13 0, 14 0 and 3 more", "the file as a whole"."""
    objects, more = finding["objects"], finding.get("count", 0) - len(finding["objects"])
    if not objects:
        return finding.get("detail") or "the file as a whole"
    named = f"object{'s' * (len(objects) > 1)} {', '.join(objects)}"
    return named + (f" and {more} more" if more > 0 else "")
