import json
import logging

from django.core.management.base import BaseCommand

from extraction.services import submit_bundle

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Validate and submit PDF bundles; prints per path whether it was accepted, and its job."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--json", action="store_true", help="one JSON array on stdout")
        parser.add_argument("--submitted-by", default="cli")
        parser.add_argument("--case-label", default="")

    def handle(self, *args, **options):
        results = [self.submit(path, options) for path in options["paths"]]
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for r in results:
            if r["accepted"]:
                self.stdout.write(f"{r['path']}: accepted, job {r['job_id']}, correlation id {r['correlation_id']}")
            else:
                self.stdout.write(f"{r['path']}: refused ({r['error_code']}) {r['message']}")

    def submit(self, path: str, options) -> dict:
        """One file's outcome; whatever happens to it, the batch goes on with the next file."""
        try:
            with open(path, "rb") as fh:
                result = submit_bundle(fh, filename=path, submitted_by=options["submitted_by"],
                                       case_label=options["case_label"]).as_dict()
        except OSError as exc:
            result = {"path": path, "accepted": False, "error_code": "unreadable_path",
                      "message": f"Cannot read {path}: {exc.strerror}.", "retryable": False}
        except Exception as exc:
            log.exception("intake failed on %s", path)  # the operator's log gets the traceback
            result = {"path": path, "accepted": False, "error_code": "intake_failed", "retryable": True,
                      "message": f"Intake failed on this file ({type(exc).__name__}); it was not accepted."}
        return {**result, "path": path}
