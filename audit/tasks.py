"""django-q2 entry points of the audit app (thin)."""

import logging

from audit.ledger import checkpoints as log_checkpoints
from audit.retention import output_sweep
from audit.verification import verify
from core.logs import job_context

log = logging.getLogger(__name__)


def sweep_outputs() -> dict:
    return output_sweep.sweep_outputs()


def run_verification(run_id: int) -> str:
    return verify.execute(run_id).status


def scheduled_verification() -> str:
    return verify.execute(verify.start_run("schedule").pk).status


def write_checkpoint() -> int | None:
    """The ledger's signed head (the frozen hash chain of schemas 1-3 has the checkpoints it will ever have)."""
    checkpoint = log_checkpoints.write_log_checkpoint()
    return checkpoint.tree_size if checkpoint else None


def request_cosignatures(checkpoint_id: int, attempt: int = 1) -> dict[str, str]:
    """The witnesses' cosignatures of a new checkpoint (audit/ledger/witnessing.py)."""
    from audit.ledger import witnessing

    return witnessing.request_cosignatures(checkpoint_id, attempt)


def apply_retention() -> int:
    from audit.retention.enforcement import apply_retention as apply
    from audit.retention.legal_holds import sync_pending

    sync_pending()  # a hold change a failed try left pending, before retention reads the objects' holds
    return len(apply())


def sync_legal_holds() -> int:
    from audit.retention.legal_holds import sync_pending

    return sync_pending()


def deliver_webhook(alert_id: int, attempt: int) -> bool:
    from audit.operations.alerts import deliver_webhook as deliver

    return deliver(alert_id, attempt)


def find_page_hints(manifest_id: int) -> dict:
    from audit.models import Manifest
    from audit.review.page_hints import find_page_hints as find

    ids = Manifest.objects.filter(pk=manifest_id).values_list("correlation_id", "job_id").first() or ("", None)
    with job_context(*ids):
        result = find(manifest_id)
        log.info("page hints of manifest %s: %s", manifest_id, result)
        return result


def generate_previews(manifest_id: int) -> dict:
    from audit.models import Manifest
    from audit.review.previews import generate_previews as generate

    # Its lines name the bundle and the job, as every other process's lines about them do.
    ids = Manifest.objects.filter(pk=manifest_id).values_list("correlation_id", "job_id").first() or ("", None)
    with job_context(*ids):
        result = generate(manifest_id)
        log.info("previews of manifest %s: %s", manifest_id, result)
        return result
