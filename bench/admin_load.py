"""Synthetic evidence for bench.admin_scale: bundles, jobs, manifests, assets and placements, fast.

Rows look like what the product writes (audit/ledger/manifest_writing.py `record_completion`): sha256 hex ids,
deterministic asset names, canonical signed manifest bodies, each a leaf of the transparency log whose index is
its sequence. No file is stored: the pages measured never open one. Everything about job i (status,
images, flags...) follows from i, so a small and a large database hold the same kinds of rows in proportion,
and the "showcase" job (case label SHOWCASE) has the same shape in both: the benchmark opens its pages.
Import only after django.setup().
"""

import hashlib
import secrets
import sys
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.ledger import activity_records, manifests, signing, tlog
from audit.models import (
    GENESIS,
    ActivityEvent,
    Alert,
    Asset,
    Case,
    CaseMap,
    Finding,
    LogLeaf,
    Manifest,
    PagePreview,
    Placement,
    RetentionAssignment,
    RetentionEvent,
    RetentionPolicy,
    ReviewFlag,
    VerificationRun,
    WebhookDelivery,
)
from audit.verifier import merkle
from extraction.accounts import ServiceAccount
from extraction.models import Attempt, Bundle, Job, Rejection, idempotency_key

JOBS_PER_TRANSACTION = 5_000  # ~50k assets: an interrupted load loses one batch, memory stays flat
INSERT_BATCH = 10_000  # bulk_create batch_size (SQLite lowers it further to its 999 parameters)
JOBS_PER_DAY = 1_000  # arrival rate: the dashboard's last day holds ~1,000 jobs at any size
SHOWCASE, SHOWCASE_ASSETS, SHOWCASE_PAGES = "bench-showcase", 12, 24
# (provider, extractor, version) as the two providers name themselves; one job in three goes to Infrai.
PROVIDERS = (("local", "pagetrail-pikepdf", "2.0+pikepdf.10.18.0"), ("infrai", "infrai", "1"))
INPUT_DAYS = 30  # the retention policy's window: inputs older than this were deleted
S = Job.Status
ERROR_CODES: dict[str, str] = {S.FAILED: "encrypted", S.UNKNOWN: "deadline_passed"}
OUTCOMES: dict[str, str] = {S.COMPLETED: "ok", S.FAILED: "failed", S.CANCELLED: "ok"}  # of a job's attempts
LOGO = hashlib.sha256(b"bench: the letterhead logo found in every bundle").hexdigest()


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ensure_loaded(jobs: int, assets: int) -> dict:
    """Load once: reuse a database that already holds enough, top up one that holds too little."""
    have_jobs, have_assets = Job.objects.count(), Asset.objects.count()
    if have_jobs >= jobs and have_assets >= assets:
        say(f"reusing the {have_jobs:,} jobs and {have_assets:,} assets already loaded")
        return {"reused": True, "jobs": have_jobs, "assets": have_assets}
    new_jobs = max(jobs - have_jobs, (assets - have_assets) // 10, 1)
    started = time.perf_counter()
    rows = Loader(new_jobs, max(assets - have_assets, 0)).run()
    seconds = time.perf_counter() - started
    say(f"loaded {rows:,} rows ({new_jobs:,} jobs) in {seconds:.1f} s: {rows / seconds:,.0f} rows/s")
    return {
        "reused": False,
        "jobs": Job.objects.count(),
        "assets": Asset.objects.count(),
        "rows": rows,
        "seconds": round(seconds, 1),
    }


def sha(*parts) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def status_of(i: int, n: int) -> str:
    if i >= n - 20:
        return (S.QUEUED, S.SUBMITTED, S.RUNNING, S.UNKNOWN)[i % 4]  # the newest are still in flight
    if i % 1000 == 500:
        return S.UNKNOWN  # lost track of, past its deadline: alerts
    return S.FAILED if i % 25 == 7 else S.CANCELLED if i % 100 == 13 else S.COMPLETED


class Loader:
    """One load of `n` jobs and `assets` assets, in transactions of JOBS_PER_TRANSACTION jobs."""

    def __init__(self, n: int, assets: int):
        self.n, self.rows, self.salt, self.now = n, 0, secrets.token_hex(8), timezone.now()
        self.showcase = not Bundle.objects.filter(case_label=SHOWCASE).exists()
        self.statuses = [S.COMPLETED if i == 0 and self.showcase else status_of(i, n) for i in range(n)]
        self.asset_counts = self._spread(assets)
        self.policy = RetentionPolicy.objects.filter(name="standard").order_by(
            "-version"
        ).first() or RetentionPolicy.objects.create(
            name="standard",
            version=1,
            is_default=True,
            input_days=INPUT_DAYS,
            output_days=365,
            contract_owner="legal",
            status=RetentionPolicy.Status.APPROVED,
            approved_by="dpo",
            approved_at=self.now,
            decision_note="bench",
            created_by="bench",
        )
        for name in ("claims-pipeline", "contracts-backend"):
            if not ServiceAccount.objects.filter(name=name).exists():
                ServiceAccount.objects.create(name=name, created_by="bench").issue_token(by="bench")

    def _spread(self, assets: int) -> list[int]:
        """Assets per job: evenly over the completed jobs (about 10 each), the showcase's fixed."""
        counts, fixed = [0] * self.n, SHOWCASE_ASSETS if self.showcase else 0
        completed = [i for i, s in enumerate(self.statuses) if s == S.COMPLETED and not (i == 0 and fixed)]
        rest, c = max(assets - fixed, 0), max(len(completed), 1)
        for k, i in enumerate(completed):
            counts[i] = (k + 1) * rest // c - k * rest // c
        counts[0] = fixed or counts[0]
        return counts

    def run(self) -> int:
        for start in range(0, self.n, JOBS_PER_TRANSACTION):
            self._batch(start, min(start + JOBS_PER_TRANSACTION, self.n))
            say(f"  {min(start + JOBS_PER_TRANSACTION, self.n):,} / {self.n:,} jobs")
        return self.rows

    def create(self, model, objects: list) -> list:
        self.rows += len(objects)
        made = model.objects.bulk_create(objects, batch_size=INSERT_BATCH)
        if model is LogLeaf and made:  # the subtrees the leaves complete, beside them, as tlog.append writes them
            tlog.store_subtrees(made[0].index, [bytes.fromhex(leaf.leaf_hash) for leaf in made])
        return made

    def at(self, i: int):
        return self.now - timedelta(days=(self.n - 1 - i) / JOBS_PER_DAY)

    def _batch(self, start: int, stop: int) -> None:
        with transaction.atomic():
            tlog.lock()
            index = range(start, stop)
            bundles = self.create(Bundle, [self.bundle(i) for i in index])
            jobs = self.create(Job, [self.job(i, b) for i, b in zip(index, bundles)])
            self.create(Attempt, [a for i, job in zip(index, jobs) for a in self.attempts(i, job)])
            done = [(i, job) for i, job in zip(index, jobs) if job.status == S.COMPLETED]
            specs = [self.asset_specs(i, job) for i, job in done]
            places = self.next_leaves(len(done))
            made = self.create(
                Manifest, [self.manifest(job, spec, i) for (_, job), spec, i in zip(done, specs, places)]
            )
            self.create(LogLeaf, [self.leaf(m, m.sequence) for m in made])
            assets = self.create(Asset, [Asset(manifest=m, **a["row"]) for m, spec in zip(made, specs) for a in spec])
            placed = zip(assets, (a for spec in specs for a in spec))
            self.create(
                Placement,
                [
                    Placement(asset=row, manifest_id=row.manifest_id, page=page, index_on_page=idx)
                    for row, a in placed
                    for page, idx in a["placements"]
                ],
            )
            self.extras(index, [(i, m) for (i, _), m in zip(done, made)], bundles, jobs, assets)

    def bundle(self, i: int) -> Bundle:
        pages = SHOWCASE_PAGES if i == 0 and self.showcase else max(self.asset_counts[i], 1) + i % 7
        deleted = self.at(i) + timedelta(days=INPUT_DAYS)  # one input in 100 is past its window, and gone
        gone = deleted if i % 100 == 50 and deleted < self.now else None
        return Bundle(
            correlation_id=sha(self.salt, "bundle", i),
            size=pages * 61_440 + i % 997,
            page_count=pages,
            mime="application/pdf",
            original_filename=f"claim-{i:07d}.pdf",
            submitted_by=f"clerk{i % 9}",
            input_deleted_at=gone,
            case_label=SHOWCASE if i == 0 and self.showcase else f"case {i // 7}" if i % 3 else "",
            created_at=self.at(i),
        )

    def job(self, i: int, bundle: Bundle) -> Job:
        provider, extractor, version = PROVIDERS[i % 3 == 0]
        status, enqueued = self.statuses[i], self.at(i)
        started = status != S.QUEUED
        after = (lambda s: enqueued + timedelta(seconds=s)) if started else (lambda s: None)
        return Job(
            bundle=bundle,
            idempotency_key=idempotency_key(bundle.correlation_id, extractor, version),
            provider=provider,
            extractor=extractor,
            extractor_version=version,
            status=status,
            provider_job_id=f"ifr_{bundle.correlation_id[:24]}" if provider == "infrai" and started else "",
            error_code=ERROR_CODES.get(status, ""),
            error_message="The PDF is encrypted." if status == S.FAILED else "",
            deadline=enqueued + timedelta(hours=1),
            enqueued_at=enqueued,
            last_woken_at=enqueued,
            picked_up_at=after(1 + i % 5),
            submitted_at=after(2 + i % 5),
            provider_finished_at=after(20 + i % 40) if status == S.COMPLETED else None,
            manifest_durable_at=after(21 + i % 40) if status == S.COMPLETED else None,
            temp_peak_bytes=bundle.size * 3 if status in Job.TERMINAL else None,
        )

    def attempts(self, i: int, job: Job) -> list[Attempt]:
        if job.status == S.QUEUED:
            return []
        kinds = ["extract"] if job.provider == "local" else ["submit", "poll", "download"]
        outcome = OUTCOMES.get(job.status, "started")
        assert job.picked_up_at is not None  # every job past QUEUED was picked up
        return [
            Attempt(
                job=job,
                number=n,
                kind=kind,
                outcome=outcome,
                worker=f"worker-{i % 4}",
                http_status=200 if kind != "extract" else None,
                started_at=job.picked_up_at,
                finished_at=job.provider_finished_at,
            )
            for n, kind in enumerate(kinds, 1)
        ]

    def asset_specs(self, i: int, job: Job) -> list[dict]:
        """Image j on page 1 + j % pages; the logo (j 0) and every fifth image are drawn twice."""
        pages, specs = job.bundle.page_count, []
        for j in range(self.asset_counts[i]):
            page, idx, content_type = 1 + j % pages, j // pages, "image/png" if j % 4 == 0 else "image/jpeg"
            width, height = 400 + 37 * (j % 40), 300 + 23 * (j % 50)
            specs.append(
                {
                    "placements": [(page, idx)] + [(min(page + 1, pages), 100 + j)] * (j % 5 == 0),
                    "row": {
                        "name": manifests.asset_name(job, page, idx, content_type),
                        "page": page,
                        "index_on_page": idx,
                        "sha256": LOGO if j == 0 else sha(self.salt, "asset", i, j),
                        "size": width * height // 6,
                        "width": width,
                        "height": height,
                        "content_type": content_type,
                        "attempt_number": 1,
                        "created_at": job.manifest_durable_at,
                    },
                }
            )
        return specs

    def manifest(self, job: Job, specs: list[dict], position: int) -> Manifest:
        """The document `record_completion` writes, hashed and signed, for the leaf at `position`."""
        assert job.manifest_durable_at is not None  # a completed job's
        bundle, at = job.bundle, manifests.timestamp(job.manifest_durable_at)
        document = {
            "schema_version": manifests.SCHEMA_VERSION,
            "sequence": position,
            "key_id": signing.current_key_id(),
            "correlation_id": bundle.correlation_id,
            "input": {"sha256": bundle.correlation_id, "size": bundle.size, "page_count": bundle.page_count},
            "extractor": {"name": job.extractor, "version": job.extractor_version, "provider": job.provider},
            "job": {
                "id": job.pk,
                "idempotency_key": job.idempotency_key,
                "provider_job_id": job.provider_job_id,
                **{
                    f: manifests.timestamp(getattr(job, f))
                    for f in ("enqueued_at", "picked_up_at", "submitted_at", "provider_finished_at")
                },
            },
            "assets": [
                {
                    **{k: a["row"][k] for k in ("name", "sha256", "size", "content_type", "width", "height")},
                    "pages": sorted({p for p, _ in a["placements"]}),
                    "attempt": 1,
                    "created_at": at,
                    "placements": [list(p) for p in sorted(a["placements"])],
                }
                for a in specs
            ],
            "warnings": [],
            "created_at": at,
        }
        body = manifests.canonical_bytes(document)
        digest = hashlib.sha256(body).hexdigest()
        row = Manifest(
            job=job,
            sequence=position,
            schema_version=manifests.SCHEMA_VERSION,
            correlation_id=bundle.correlation_id,
            extractor=job.extractor,
            extractor_version=job.extractor_version,
            page_count=bundle.page_count,
            body=body.decode("ascii"),
            sha256=digest,
            signature=signing.sign(body),
            key_id=signing.current_key_id(),
            storage_name=manifests.manifest_name(job, digest),
            created_at=job.manifest_durable_at,
        )
        return row

    def next_leaves(self, n: int) -> range:
        """The next `n` positions of the log (the loader holds the log's lock, as `tlog.append` does)."""
        last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
        return range(0 if last is None else last + 1, (0 if last is None else last + 1) + n)

    def record_leaf(self, record, index: int, at) -> LogLeaf:
        """A retention event's, a case map's or an activity event's place in the ledger, as `tlog.append` gives it."""
        kind = tlog.KINDS[type(record)]
        return LogLeaf(
            index=index,
            kind=kind,
            **{kind: record},
            leaf_hash=merkle.leaf_hash(record.body.encode("utf-8")).hex(),
            created_at=at,
        )

    def leaf(self, manifest: Manifest, index: int) -> LogLeaf:
        """The manifest's place in the ledger (`tlog.append`)."""
        return LogLeaf(
            index=index,
            manifest=manifest,
            leaf_hash=merkle.leaf_hash(manifest.body.encode("ascii")).hex(),
            created_at=manifest.created_at,
        )

    def extras(self, index: range, done: list, bundles: list, jobs: list, assets: list) -> None:
        """Rows of the other changelists, about one per 100 jobs each, so that they fill pages too."""
        showcase = [(i, m) for i, m in done if i == 0 and self.showcase]
        flagged = [(i, m) for i, m in done if i % 100 == 11] + showcase
        flags = self.create(
            ReviewFlag,
            [
                ReviewFlag(
                    manifest=m,
                    pages=[1 + (i + k) % m.page_count],
                    kind=ReviewFlag.Kind.MISSING_IMAGE,
                    note="The stamp on this page is not among the assets.",
                    raised_by=f"reviewer{i % 3}",
                    raised_at=m.created_at + timedelta(hours=2),
                    status=ReviewFlag.Status.RESOLVED if i % 300 == 11 else ReviewFlag.Status.OPEN,
                )
                for i, m in flagged
                for k in range(1 + (i == 0 and self.showcase))
            ],
        )
        self.create(
            PagePreview,
            [
                self.preview(m, page, width)
                for _, m in flagged
                for page in range(1, m.page_count + 1)
                for width in (200, 1000)
            ],
        )
        maps = self.create(
            CaseMap, [self.case_map(m) for i, m in done if i % 1000 == 23] + [self.case_map(m) for _, m in showcase]
        )
        self.create(
            LogLeaf, [self.record_leaf(cm, i, cm.created_at) for cm, i in zip(maps, self.next_leaves(len(maps)))]
        )
        self.create(
            Case,
            [
                Case(case_map=cm, name=f"claim {k}", first_page=first, last_page=last)
                for cm in maps
                for k, (first, last) in enumerate(thirds(cm.manifest.page_count), 1)
            ],
        )
        self.activity(
            [(f.raised_by, "flag_raised", f, f.raised_at) for f in flags]
            + [(cm.created_by, "bundle_split", cm, cm.created_at) for cm in maps]
        )
        self.retention(bundles, showcase)
        self.create(
            Rejection,
            [
                Rejection(
                    code=("not_pdf", "encrypted", "too_many_pages", "unreadable")[i % 4],
                    message="Refused at intake.",
                    size=10_000 + i,
                    sha256=sha(self.salt, "rejected", i),
                    original_filename=f"scan-{i:07d}.pdf",
                    submitted_by=f"clerk{i % 9}",
                    created_at=self.at(i),
                )
                for i in index
                if i % 50 == 3
            ],
        )
        self.alerts([job for job in jobs if job.status == S.UNKNOWN])
        self.verification(done, assets)

    def preview(self, manifest: Manifest, page: int, width: int) -> PagePreview:
        return PagePreview(
            manifest=manifest,
            page=page,
            max_width=width,
            content_type="image/png",
            storage_name=f"{manifests.output_prefix(manifest.job)}/previews/p{page:05d}-w{width}.png",
            sha256=sha(self.salt, "preview", manifest.sha256, page, width),
            size=width * 30,
            width=width,
            height=width * 1294 // 1000,
            created_at=manifest.created_at,
        )

    def case_map(self, manifest: Manifest) -> CaseMap:
        document = {
            "schema_version": 1,
            "manifest_sha256": manifest.sha256,
            "manifest_sequence": manifest.sequence,
            "correlation_id": manifest.correlation_id,
            "page_count": manifest.page_count,
            "cases": [
                {"name": f"claim {k}", "pages": list(pages), "assets": []}
                for k, pages in enumerate(thirds(manifest.page_count), 1)
            ],
        }
        body = manifests.canonical_bytes(document)
        return CaseMap(
            manifest=manifest,
            manifest_sha256=manifest.sha256,
            body=body.decode("ascii"),
            sha256=hashlib.sha256(body).hexdigest(),
            signature=signing.sign(body),
            key_id=signing.current_key_id(),
            created_by="reviewer0",
            created_at=manifest.created_at + timedelta(hours=3),
        )

    def activity(self, entries: list[tuple]) -> None:
        """Appended to the activity record's hash chain, signed and each a leaf of the ledger, as
        ActivityEvent.record does one by one."""
        if not entries:
            return
        last = ActivityEvent.objects.order_by("-pk").values_list("sha256", flat=True).first() or GENESIS
        signing.cover(min(at for *_, at in entries))  # once: the key's published period covers every event
        key, key_id = signing.private_key(), signing.current_key_id()
        events = []
        for actor, action, obj, at in entries:
            event = ActivityEvent(
                actor=actor,
                action=action,
                object_type=type(obj).__name__.lower(),
                object_id=str(obj.pk),
                after={"by": "bench"},
                at=at,
                previous_sha256=last,
                key_id=key_id,
            )
            event.sha256 = last = hashlib.sha256(event.content()).hexdigest()
            body = manifests.canonical_bytes(activity_records.statement(event, at))
            event.body, event.signature = body.decode("ascii"), key.sign(body).hex()
            events.append(event)
        events = self.create(ActivityEvent, events)
        self.create(LogLeaf, [self.record_leaf(e, i, e.at) for e, i in zip(events, self.next_leaves(len(events)))])

    def retention(self, bundles: list, showcase: list) -> None:
        """Inputs deleted after their window; the showcase's outputs kept by a legal hold."""
        gone = [b for b in bundles if b.input_deleted_at]
        held = [(m.job.bundle, m) for _, m in showcase]
        self.create(
            RetentionAssignment,
            [
                RetentionAssignment(bundle=b, policy=self.policy, assigned_at=b.created_at)
                for b in gone + [b for b, _ in held]
            ],
        )
        events = self.create(
            RetentionEvent,
            [
                RetentionEvent(
                    bundle=b,
                    policy=self.policy,
                    what="input",
                    outcome="deleted",
                    files=1,
                    bytes_freed=b.size,
                    at=b.input_deleted_at,
                )
                for b in gone
            ]
            + [
                RetentionEvent(
                    bundle=b,
                    manifest=m,
                    policy=self.policy,
                    what="outputs",
                    outcome="blocked_by_legal_hold",
                    at=self.now,
                )
                for b, m in held
            ],
        )
        self.create(LogLeaf, [self.record_leaf(e, i, e.at) for e, i in zip(events, self.next_leaves(len(events)))])

    def alerts(self, unknown: list[Job]) -> None:
        alerts = self.create(
            Alert,
            [
                Alert(
                    kind=Alert.Kind.JOB_UNKNOWN,
                    key=f"job_unknown:{job.pk}",
                    link=f"/admin/extraction/job/{job.pk}/change/",
                    message=f"Job {job.pk} passed its deadline; its outcome at the provider is unknown.",
                    first_seen=min(job.deadline, self.now),
                    last_seen=min(job.deadline, self.now),
                )
                for job in unknown
            ],
        )
        self.create(
            WebhookDelivery,
            [
                WebhookDelivery(
                    alert=a,
                    attempt=1,
                    url="https://hooks.example.com/pagetrail",
                    status_code=200,
                    delivered=True,
                    at=a.first_seen,
                )
                for a in alerts
            ],
        )

    def verification(self, done: list, assets: list[Asset]) -> None:
        """One passed run per batch, or failed with a missing asset for one manifest in 1,000."""
        first_asset = {a.manifest_id: a for a in reversed(assets)}
        broken = [first_asset[m.pk] for i, m in done if i % 1000 == 17 and m.pk in first_asset]
        run = self.create(
            VerificationRun,
            [
                VerificationRun(
                    status="failed" if broken else "passed",
                    started_by="scheduler",
                    manifests_total=len(done),
                    manifests_done=len(done),
                    assets_total=len(assets),
                    assets_done=len(assets),
                    bytes_done=sum(a.size for a in assets),
                    findings_count=len(broken),
                    created_at=self.now,
                    started_at=self.now,
                    finished_at=self.now,
                )
            ],
        )[0]
        self.create(
            Finding,
            [
                Finding(
                    run=run,
                    kind=Finding.Kind.MISSING_OUTPUT,
                    manifest_id=a.manifest_id,
                    asset=a,
                    job_id=a.manifest.job_id,
                    name=a.name,
                    created_at=self.now,
                    detail="The asset file is missing from the output store.",
                )
                for a in broken
            ],
        )


def thirds(pages: int) -> list[tuple[int, int]]:
    """Up to three consecutive page ranges covering 1..pages: the cases of a split bundle."""
    cuts = sorted({1, 1 + pages // 3, 1 + 2 * pages // 3})
    return [(first, next_first - 1) for first, next_first in zip(cuts, cuts[1:] + [pages + 1])]
