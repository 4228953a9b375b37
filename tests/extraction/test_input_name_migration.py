"""Dropping Bundle.input_name: the upgrade refuses while a row names its input anywhere but the derived name,
and going back restores the column from the correlation id."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from extraction.models import Bundle
from tests.extraction.test_account_migration import migrate

BEFORE = [("extraction", "0015_job_account")]
AFTER = [("extraction", "0016_bundle_input_name_derived")]
SHA = "ab" + "c" * 62


@pytest.fixture
def old_bundles(transactional_db):
    apps = migrate(BEFORE)

    def make(sha, name):
        return apps.get_model("extraction", "Bundle").objects.create(
            correlation_id=sha, size=1, page_count=1, mime="application/pdf", submitted_by="t", input_name=name
        )

    yield make
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())  # the other tests' schema again


def test_a_derived_name_is_dropped_and_derived_again(old_bundles):
    old_bundles(SHA, f"ab/{SHA}.pdf")
    apps = migrate(AFTER)
    # Read as the migration left it: today's Bundle has columns later migrations add.
    [(sha,)] = apps.get_model("extraction", "Bundle").objects.values_list("correlation_id")
    assert Bundle(correlation_id=sha).input_name == f"ab/{SHA}.pdf"
    assert "input_name" not in {f.name for f in apps.get_model("extraction", "Bundle")._meta.get_fields()}


def test_it_refuses_to_drop_the_only_record_of_a_file_stored_elsewhere(old_bundles):
    bundle = old_bundles(SHA, "legacy/claim.pdf")
    with pytest.raises(RuntimeError, match=r"1 bundle\(s\) .*'legacy/claim.pdf'.*then run migrate again"):
        migrate(AFTER)
    assert type(bundle).objects.get().input_name == "legacy/claim.pdf"  # nothing dropped
    type(bundle).objects.update(input_name=f"ab/{SHA}.pdf")  # as an operator who moved the file would


def test_going_back_restores_the_column(old_bundles):
    old_bundles(SHA, f"ab/{SHA}.pdf")
    migrate(AFTER)
    apps = migrate(BEFORE)
    assert apps.get_model("extraction", "Bundle").objects.get().input_name == f"ab/{SHA}.pdf"
