import json

from django.core.management.base import BaseCommand

from extraction.services import submit_bundle


class Command(BaseCommand):
    help = "Validate and submit PDF bundles; prints per path whether it was accepted, and its job."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--json", action="store_true", help="one JSON array on stdout")
        parser.add_argument("--submitted-by", default="cli")
        parser.add_argument("--case-label", default="")

    def handle(self, *args, **options):
        results = []
        for path in options["paths"]:
            try:
                with open(path, "rb") as fh:
                    result = submit_bundle(fh, filename=path, submitted_by=options["submitted_by"],
                                           case_label=options["case_label"]).as_dict()
            except OSError as exc:
                result = {"path": path, "accepted": False, "error_code": "unreadable_path",
                          "message": f"Cannot read {path}: {exc.strerror}."}
            result["path"] = path
            results.append(result)
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for r in results:
            if r["accepted"]:
                self.stdout.write(f"{r['path']}: accepted, job {r['job_id']}, correlation id {r['correlation_id']}")
            else:
                self.stdout.write(f"{r['path']}: refused ({r['error_code']}) {r['message']}")
