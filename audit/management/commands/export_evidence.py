import datetime as dt
import getpass
import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import dateparse, timezone

from audit.export.package import EvidenceScopeError, build_evidence
from audit.models import Case


def moment(text: str, *, end_of_day: bool = False) -> dt.datetime:
    """A date or a datetime; a bare `--to` date includes that whole day (the range ends before the next)."""
    try:  # a bare date first: parse_datetime would also read it, as midnight
        day = dateparse.parse_date(text)
        parsed = None if day else dateparse.parse_datetime(text)
    except ValueError:
        parsed = day = None
    if day is not None:
        parsed = dt.datetime.combine(day + dt.timedelta(days=1 if end_of_day else 0), dt.time())
    if parsed is None:
        raise CommandError(f"{text!r} is not a date (YYYY-MM-DD) or a datetime (YYYY-MM-DDTHH:MM[:SS][+HH:MM]).")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def operator() -> str:
    try:
        return f"{getpass.getuser()} (manage.py export_evidence)"
    except (OSError, KeyError):  # no login name in some containers
        return "manage.py export_evidence"


class Command(BaseCommand):
    help = (
        "Write an evidence package (zip with manifests, their log checkpoint and proofs, verification results, "
        "optionally assets, and an offline verifier) for a bundle, a manifest, a case or a date range."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="the zip file to write")
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--bundle", metavar="CORRELATION_ID", help="a bundle's correlation id (input sha256)")
        scope.add_argument("--manifest", metavar="SEQUENCE", type=int, help="one manifest, by chain sequence")
        scope.add_argument("--from", dest="date_from", metavar="DATE", help="manifests created from DATE")
        scope.add_argument("--case", metavar="CASE_ID", type=int, help="one case of a split bundle (Audit → Cases)")
        parser.add_argument("--to", dest="date_to", metavar="DATE", help="manifests created up to DATE (inclusive)")
        parser.add_argument("--with-assets", action="store_true", help="include the extracted images")
        parser.add_argument("--exported-by", default="", help="who exports (recorded in the package)")

    def handle(self, *args, **options):
        if options["date_to"] and (options["bundle"] or options["manifest"] is not None):
            raise CommandError("--to goes with --from (a date range), not with --bundle or --manifest.")
        if not (
            options["bundle"]
            or options["manifest"] is not None
            or options["date_from"]
            or options["date_to"]
            or options["case"] is not None
        ):
            raise CommandError(
                "Choose a scope: --bundle CORRELATION_ID, --manifest SEQUENCE, --case CASE_ID or --from/--to DATE."
            )
        case = None
        if options["case"] is not None:
            case = Case.objects.select_related("case_map__manifest").filter(pk=options["case"]).first()
            if case is None:
                raise CommandError(f"No case with id {options['case']}.")
        date_from = moment(options["date_from"]) if options["date_from"] else None
        date_to = moment(options["date_to"], end_of_day=True) if options["date_to"] else None
        try:
            summary = build_evidence(
                options["out"],
                bundle=options["bundle"],
                manifest=options["manifest"],
                case=case,
                date_from=date_from,
                date_to=date_to,
                include_assets=options["with_assets"],
                exported_by=options["exported_by"] or operator(),
            )
        except EvidenceScopeError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(summary, indent=2))
        if summary["open_findings"]:  # on stderr: stdout stays the summary's JSON
            self.stderr.write(
                f"Warning: {summary['open_findings']} open verification finding(s) about this scope; the package "
                "lists them (README.txt, index.json open_findings)."
            )
