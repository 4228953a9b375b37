import json
import logging
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from extraction.intake import decision, staging
from extraction.intake.validation import TooLarge
from extraction.models import Submission

log = logging.getLogger(__name__)
NO_WORKER = (
    "No intake worker decided it within {timeout:g} s; it stays pending and is decided once one runs "
    "(PAGETRAIL_CLUSTER=intake manage.py qcluster, on the host whose intake queue is {queue}). Or submit with "
    "--here to check it in this process."
)


class Command(BaseCommand):
    help = (
        "Submit PDF bundles; by default waits for the intake worker's decision and prints per path whether "
        "it was accepted, and its job."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--json", action="store_true", help="one JSON array on stdout")
        parser.add_argument("--submitted-by", default="cli")
        parser.add_argument("--case-label", default="")
        how = parser.add_mutually_exclusive_group()
        how.add_argument(
            "--here",
            action="store_true",
            help="validate in this process (in its limited PDF child): no intake worker needed",
        )
        how.add_argument("--no-wait", action="store_true", help="print the pending submissions and return")
        parser.add_argument(
            "--timeout",
            type=float,
            default=300.0,
            help="seconds to wait for the intake worker's decisions (default 300)",
        )

    def handle(self, *args, **options):
        outcomes = [self.submit(path, options) for path in options["paths"]]
        if not options["here"] and not options["no_wait"]:
            self.wait([o for o in outcomes if isinstance(o, Submission)], options["timeout"])
        waited = None if options["no_wait"] else options["timeout"]
        results = [
            {**o, "path": path} if isinstance(o, dict) else row_of(o, path, waited)
            for o, path in zip(outcomes, options["paths"])
        ]
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for r in results:
            self.stdout.write(line_of(r))

    def submit(self, path: str, options) -> "Submission | dict":
        """One file's submission (or outcome); whatever happens to it, the batch goes on with the next file."""
        try:
            fh = open(path, "rb")
        except OSError as exc:
            return failed(path, "unreadable_path", f"Cannot read {path}: {exc.strerror}.", retryable=False)
        try:
            with fh:
                return self.submit_open(fh, path, options)
        except OSError as exc:  # the temp area or a store is full or read-only
            return failed(path, "storage_unavailable", f"Could not store {path} for intake: {exc.strerror or exc}.")
        except Exception as exc:
            log.exception("intake failed on %s", path)  # the operator's log gets the traceback
            return failed(
                path, "intake_failed", f"Intake failed on this file ({type(exc).__name__}); it was not accepted."
            )

    def submit_open(self, fh, path: str, options) -> "Submission | dict":
        who, label = options["submitted_by"], options["case_label"]
        if options["here"]:
            return staging.submit_bundle(fh, filename=path, submitted_by=who, case_label=label).as_dict()
        try:
            staged = staging.stage(fh, filename=path, submitted_by=who)
        except TooLarge as refusal:  # too large: decided (and recorded) before any submission
            return decision.IntakeResult.refused(path, refusal).as_dict()
        return staging.receive(staged, filename=path, submitted_by=who, case_label=label)

    def wait(self, submissions: list[Submission], timeout: float, sleep=time.sleep, clock=time.monotonic) -> None:
        """Until every submission is decided or `timeout` passes; re-reads each pending one."""
        deadline = clock() + timeout
        pending = [s for s in submissions if not s.is_decided]
        while pending and clock() < deadline:
            sleep(min(0.2, max(deadline - clock(), 0)))
            for s in pending:
                s.refresh_from_db()
            pending = [s for s in pending if not s.is_decided]


def failed(path: str, code: str, message: str, retryable: bool = True) -> dict:
    return {"path": path, "accepted": False, "error_code": code, "message": message, "retryable": retryable}


def row_of(submission: Submission, path: str, waited: float | None) -> dict:
    if submission.is_decided:
        return {**decision.result_of(submission).as_dict(), "path": path, "submission_id": submission.pk}
    message = (
        NO_WORKER.format(timeout=waited, queue=settings.PAGETRAIL_INTAKE_QUEUE)
        if waited is not None
        else f"Queued for an intake worker ({settings.PAGETRAIL_INTAKE_QUEUE})."
    )
    return {"path": path, "accepted": False, "submission_id": submission.pk, "state": "pending", "message": message}


def line_of(r: dict) -> str:
    if r["accepted"]:
        return f"{r['path']}: accepted, job {r['job_id']}, correlation id {r['correlation_id']}"
    if r.get("state") == "pending":
        return f"{r['path']}: pending (submission {r['submission_id']}) {r['message']}"
    return f"{r['path']}: refused ({r['error_code']}) {r['message']}"
