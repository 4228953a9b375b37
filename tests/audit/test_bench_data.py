"""The benchmark's synthetic evidence (bench/admin_load.py) verifies as the product's does: every manifest a
leaf of the transparency log, in chain order, and every retention event, case map and activity event a leaf too
(an activity event signed, as ActivityEvent.record signs it)."""

import pytest

from audit.ledger import signing, tlog
from audit.models import ActivityEvent, CaseMap, Finding, LogLeaf, Manifest, RetentionEvent
from audit.verification import integrity
from audit.verification import ledger_checks as log_checks

pytestmark = pytest.mark.django_db


def test_bench_manifests_are_leaves_of_the_log_in_chain_order():
    from bench.admin_load import Loader

    before = LogLeaf.objects.count()  # the records migrate made (roles, the signing key)
    Loader(30, 120).run()
    Loader(10, 40).run()  # a top-up continues the log where the first load ended
    assert [f.detail for f in log_checks.check_all() if f.kind == Finding.Kind.LOG_MISMATCH] == []
    assert [f.detail for f in integrity.check_activity(signing.trust())] == []
    records = [Manifest, RetentionEvent, CaseMap, ActivityEvent]
    assert len(tlog.leaf_hashes()) == sum(model.objects.count() for model in records)
    assert LogLeaf.objects.filter(kind="activity", index__gte=before).exists()


def test_the_proof_benchmarks_log_verifies_and_proves_the_same_both_ways():
    from bench import log_proofs

    log_proofs.grow(300)
    assert LogLeaf.objects.count() == 300
    assert [f.detail for f in log_checks.check_all() if f.kind == Finding.Kind.LOG_MISMATCH] == []
    rows, failures = log_proofs.measure(300, rounds=4, rebuilds=2, seed=1)
    assert failures == [] and [r["proof"] for r in rows] == ["inclusion proof", "consistency proof", "checkpoint root"]
    assert all(r["stored_queries"] == 1 for r in rows)
