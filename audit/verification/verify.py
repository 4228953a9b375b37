"""Re-verification runs: every asset re-hashed, every manifest's bytes, signature and chain checked,
the output store checked for files no manifest names, the chain checked against signed checkpoints.

Hashing is streamed; rows are read in chunks with only the fields needed, and progress is written
at most once a second, so a run is bounded by storage read speed rather than by queries.
"""

import hashlib
import json
import time

from django.db import transaction
from django.db.models import Count, F
from django.db.models.functions import Now

from audit.ledger import activity_records, manifests, signing
from audit.ledger import chain_checkpoints as checkpoints
from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import recovery as ledger_recovery
from audit.ledger.manifests import canonical_bytes
from audit.models import GENESIS, Asset, Finding, Manifest, PagePreview, VerificationRun
from audit.operations.alerts import raise_alert
from audit.retention import enforcement as retention
from audit.retention import events as retention_events
from audit.review import previews
from audit.verification import integrity
from audit.verification import ledger_checks as log_checks
from core import stores
from extraction.models import Bundle, Job

Kind = Finding.Kind
LEDGER_FILES = (f"{checkpoints.PREFIX}/", f"{log_checkpoints.PREFIX}/")
RESULT_FINDINGS = 1000  # findings listed in a run's ledger record; the rest are counted and hashed


def start_run(by: str, *, bundle=None, date_from=None, date_to=None) -> VerificationRun:
    return VerificationRun.objects.create(
        started_by=by[:150], scope_bundle=bundle, scope_from=date_from, scope_to=date_to
    )


def verify_all(by: str = "verify_all") -> tuple[list[Finding], dict]:
    """Run a whole-deployment verification now; returns its findings and counts."""
    run = execute(start_run(by).pk)
    counts = {"manifests": run.manifests_done, "assets": run.assets_done, "bytes": run.bytes_done}
    return list(run.findings.select_related("manifest")), counts


def execute(run_id: int) -> VerificationRun:
    """Carry out a queued run (a redelivered task finds it taken and does nothing)."""
    run = VerificationRun.objects.select_related("scope_bundle").get(pk=run_id)
    if not run.mark_running():
        return run
    try:
        findings = _check_everything(run)
    except Exception as exc:
        if run.mark_error(repr(exc)):
            activity_records.record(
                "verification", "verification_errored", run, after={"scope": run.scope, "error": repr(exc)}
            )
        raise
    for finding in findings:
        finding.run = run
    with transaction.atomic():  # the findings, the run's result and its ledger record stand or fall together
        if not run.mark_finished(len(findings)):  # requeued and started again: the run is its new try's now
            run.refresh_from_db()
            return run
        Finding.objects.bulk_create(findings, batch_size=1000)
        run.refresh_from_db()
        activity_records.record("verification", "verification_finished", run, after=result(run, findings))
    if findings:
        raise_alert(
            "verification_findings",
            "verification-findings",
            link=f"/admin/audit/verificationrun/{run_id}/change/",
            message=f"Verification run {run_id} ({run.scope}) found {len(findings)} problem(s).",
        )
    run.refresh_from_db()
    return run


def result(run: VerificationRun, findings: list[Finding]) -> dict:
    """What the ledger keeps of a run: its scope, status and counts, and each finding (kind, manifest, name)
    up to RESULT_FINDINGS of them, with the sha256 of the whole list so a longer one can be checked."""
    sequences: dict[int | None, int] = dict(
        Manifest.objects.filter(pk__in={f.manifest_id for f in findings}).values_list("pk", "sequence")
    )
    listed = [[f.kind, sequences.get(f.manifest_id), f.name] for f in findings]
    return {
        "scope": run.scope,
        "status": run.status,
        "manifests": run.manifests_done,
        "assets": run.assets_done,
        "bytes": run.bytes_done,
        "findings_count": len(findings),
        "findings_sha256": hashlib.sha256(canonical_bytes(listed)).hexdigest(),
        "findings": listed[:RESULT_FINDINGS],
    }


def scoped_manifests(run: VerificationRun):
    found = Manifest.objects.all()
    if run.scope_bundle_id:
        found = found.filter(job__bundle=run.scope_bundle_id)
    if run.scope_from:
        found = found.filter(created_at__gte=run.scope_from)
    if run.scope_to:
        found = found.filter(created_at__lt=run.scope_to)
    return found


def _check_everything(run: VerificationRun) -> list[Finding]:
    in_scope, trusted = scoped_manifests(run), signing.trust()
    # Files deleted under a retention policy are accounted for by their signed RetentionEvent, not missing.
    about_events, excused = retention_events.check_all(trusted)
    assets = Asset.objects.filter(manifest__in=in_scope)
    run.record_progress(manifests_total=in_scope.count(), assets_total=assets.count())
    findings = _check_manifests(run, in_scope, trusted, excused["outputs"])
    findings += _check_assets(run, assets, excused["outputs"])
    if not run.is_whole_deployment:
        bundles = Bundle.objects.filter(jobs__manifest__in=in_scope).distinct()
        return findings + integrity.check_inputs(bundles, excused["inputs"])
    findings += about_events + integrity.check_signing_keys(trusted)
    # A sign of life inside the steps that go through every input, preview or stored file, and between steps:
    # on a large deployment one of them alone can outlast the lease.
    pulse = Pulse(run)
    steps = (
        lambda: integrity.check_inputs(Bundle.objects.all(), excused["inputs"], pulse),
        lambda: integrity.check_input_store(pulse),
        lambda: integrity.check_activity(trusted) + integrity.check_chain_head() + checkpoints.check_all(trusted),
        lambda: integrity.check_previews(excused["outputs"], pulse) + log_checks.check_all(),
        lambda: _check_store(pulse),
    )
    for step in steps:
        findings += step()
        run.record_progress()
    return findings + _jobs_past_deadline() + _inputs_kept_too_long()


class Pulse:
    """Called once an item inside a long step: records a sign of life for the run's lease at most once a second,
    so a try that is still working is never taken for abandoned."""

    def __init__(self, run: VerificationRun):
        self.run, self.last = run, time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self.last >= 1.0:
            self.run.record_progress()
            self.last = time.monotonic()


def _check_manifests(run, in_scope, trusted: signing.Trust, excused: set[str]) -> list[Finding]:
    found, done, last = [], 0, time.monotonic()
    chained = Manifest.objects.filter(schema_version__lte=manifests.CHAINED)  # schemas 1-3: the frozen hash chain
    chain = dict(chained.values_list("sequence", "sha256"))  # two short columns, one query
    for manifest in in_scope.annotate(leaf_index=F("log_leaf__index")).order_by("sequence").iterator(chunk_size=500):
        if manifest.schema_version <= manifests.CHAINED:
            place = chain.get(manifest.sequence - 1) if manifest.sequence > 1 else GENESIS
        else:
            place = manifest.leaf_index
        found += check_manifest(manifest, place, trusted, file_retired=manifest.storage_name in excused)
        done += 1
        if time.monotonic() - last >= 1.0:  # a sign of life for the lease, and progress for the admin
            run.record_progress(manifests_done=done)
            last = time.monotonic()
    run.record_progress(manifests_done=done)
    return found


def check_manifest(
    manifest: Manifest, place: str | int | None, trusted: signing.Trust, file_retired: bool = False
) -> list[Finding]:
    """`place`: for a chained manifest (schemas 1-3), the hash of the one before it; since schema 4, its leaf index
    (None when it has no leaf, which log_checks reports)."""
    body, out = manifest.body.encode("utf-8"), []  # an edited row may hold non-ASCII: a finding, not a crash

    def problem(kind, detail):
        return Finding(kind=kind, manifest=manifest, name=manifest.storage_name, detail=detail)

    if hashlib.sha256(body).hexdigest() != manifest.sha256:
        out.append(problem(Kind.MANIFEST_CHANGED, "The manifest row's bytes no longer match its sha256."))
    if why := signing.signature_problem(
        body, manifest.signature, manifest.key_id, trusted, manifest.created_at, manifest
    ):
        out.append(problem(Kind.BAD_SIGNATURE, why))
    if manifest.schema_version <= manifests.CHAINED and manifest.previous_sha256 != place:
        out.append(
            problem(
                Kind.CHAIN_BREAK,
                "The previous-manifest hash does not match the manifest before it "
                "(a manifest was dropped, reordered or rewritten).",
            )
        )
    leaf_index = None if isinstance(place, str) else place  # since schema 4, `place` is a leaf index
    if manifest.schema_version > manifests.CHAINED and (said := _sequence_problem(manifest, body, leaf_index)):
        out.append(problem(Kind.POSITION_MISMATCH, said))
    if file_retired:
        return out
    try:
        with stores.outputs().open(manifest.storage_name, "rb") as fh:
            stored = fh.read()
    except FileNotFoundError:
        return out + [problem(Kind.MISSING_OUTPUT, "The stored manifest file is missing.")]
    if stored != body:
        out.append(problem(Kind.MANIFEST_CHANGED, "The stored manifest file differs from the recorded bytes."))
    return out


def _sequence_problem(manifest: Manifest, body: bytes, leaf_index: int | None) -> str | None:
    """A manifest's sequence is its leaf index: in its row and in its signed body."""
    try:
        signed = json.loads(body).get("sequence")
    except (ValueError, AttributeError):
        signed = None  # an unreadable body is manifest_changed
    if leaf_index is not None and manifest.sequence != leaf_index:
        return f"The manifest's row says sequence {manifest.sequence}, but it is leaf {leaf_index} of the ledger."
    if signed is not None and signed != manifest.sequence:
        return f"The manifest's row says sequence {manifest.sequence}, its signed body {signed}."
    return None


def _check_assets(run, assets, excused: set[str]) -> list[Finding]:
    found, done, size, last = [], 0, 0, time.monotonic()
    rows = assets.only("pk", "manifest_id", "name", "sha256", "size").order_by("manifest_id", "page", "index_on_page")
    for asset in rows.iterator(chunk_size=2000):
        found += [] if asset.name in excused else check_asset(asset)
        done, size = done + 1, size + asset.size
        if time.monotonic() - last >= 1.0:  # progress for the admin, without a query per asset
            run.record_progress(assets_done=done, bytes_done=size)
            last = time.monotonic()
    run.record_progress(assets_done=done, bytes_done=size)
    return found


def check_asset(asset: Asset) -> list[Finding]:
    return integrity.rehashed(
        asset.name, asset.sha256, "The asset file", "the manifest says", asset=asset, manifest_id=asset.manifest_id
    )


def _check_store(pulse: integrity.Pulse) -> list[Finding]:
    """Files in the output store that no manifest or checkpoint names."""
    newest = Manifest.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    expected = Manifest.files_named_by(Manifest.objects.all())
    expected |= set(PagePreview.objects.values_list("storage_name", flat=True))
    expected |= ledger_recovery.stored_names()
    rendering = _previews_in_progress()
    unnamed = []
    for name in stores.walk(stores.outputs()):
        pulse()
        # The ledger's own files (checkpoints, position markers) are checked by the ledger's checks. Not listed
        # first as expected: a marker is written after each append, so a walk under load meets new ones (225 at
        # 10,000 jobs).
        if name.startswith(LEDGER_FILES):
            continue
        if name not in expected and integrity.stray_preview(name, rendering):
            unnamed.append(name)
    found = []
    for name in _not_in_flight(unnamed, newest, expected):
        twin = stores.without_collision_suffix(name)
        kind = Kind.DUPLICATE_NAME if twin in expected else Kind.UNEXPECTED_OUTPUT
        detail = (
            f"A second file for the deterministic name {twin}."
            if twin in expected
            else "A stored file that no manifest names."
        )
        found.append(Finding(kind=kind, name=name, detail=detail))
    return found


def _not_in_flight(unnamed: list[str], newest: int, expected: set[str]) -> list[str]:
    """Of the files no manifest named when the walk began, those that are strays once it ended. A job's files land
    before its manifest commits (a 240-page bundle's in a few seconds), so the walk finds those of jobs running now
    and of manifests committed since; and a failed try deletes what it wrote after the walk may have seen it.
    Asked only when there are such files: a store without strays costs nothing more."""
    if not unnamed:
        return []
    expected = expected | Manifest.files_named_by(Manifest.objects.filter(pk__gt=newest))
    running = Job.objects.filter(status__in=Job.ACTIVE).select_related("bundle")
    writing = tuple({manifests.output_prefix(job) + "/" for job in running})
    outputs = stores.outputs()
    return [name for name in unnamed if name not in expected and not name.startswith(writing) and outputs.exists(name)]


def _previews_in_progress() -> dict[str, int]:
    """Output prefixes whose page previews a worker may still be writing, with their page counts."""
    done = dict(PagePreview.objects.values_list("manifest").annotate(n=Count("pk")).order_by())
    return {
        name.rsplit("/", 1)[0]: pages
        for pk, name, pages in Manifest.objects.values_list("pk", "storage_name", "page_count")
        if done.get(pk, 0) < len(previews.WIDTHS) * pages
    }


def _inputs_kept_too_long() -> list[Finding]:
    return [
        Finding(
            kind=Kind.INPUT_PAST_RETENTION,
            name=bundle.input_name,
            detail=f"The input of bundle {bundle.correlation_id} is kept past its retention window.",
        )
        for bundle in retention.overdue_inputs()
    ]


def _jobs_past_deadline() -> list[Finding]:
    late = Job.objects.active().filter(deadline__lt=Now()).only("pk", "status", "deadline")
    return [
        Finding(
            kind=Kind.PAST_DEADLINE,
            job=job,
            detail=f"Job {job.pk} is {job.status} past its deadline ({job.deadline:%Y-%m-%d %H:%M} UTC).",
        )
        for job in late
    ]
