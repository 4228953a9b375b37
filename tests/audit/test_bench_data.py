"""The benchmark's synthetic evidence (bench/admin_load.py) verifies as the product's does: every manifest a
leaf of the transparency log, in chain order, and every retention event and case map a leaf too."""

import pytest

from audit import log_checks, tlog
from audit.models import CaseMap, Finding, Manifest, RetentionEvent

pytestmark = pytest.mark.django_db


def test_bench_manifests_are_leaves_of_the_log_in_chain_order():
    from bench.admin_load import Loader

    Loader(30, 120).run()
    Loader(10, 40).run()  # a top-up continues the log where the first load ended
    assert [f.detail for f in log_checks.check_all() if f.kind == Finding.Kind.LOG_MISMATCH] == []
    assert (
        len(tlog.leaf_hashes())
        == Manifest.objects.count() + RetentionEvent.objects.count() + CaseMap.objects.count()
        > 0
    )
