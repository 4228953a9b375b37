"""The correlation id is one column of a manifest (migration 0025 dropped its copy, input_sha256), and going back
to 0024 makes the copy again from it."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit.models import Manifest


@pytest.mark.django_db(transaction=True)
def test_going_back_before_0025_refills_the_copy_of_the_correlation_id(completed):
    assert not hasattr(completed, "input_sha256")
    before, after = [("audit", "0024_one_counter")], [("audit", "0025_manifest_correlation_id_once")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("audit", "Manifest")
    assert list(old.objects.values_list("input_sha256", "correlation_id")) == [(completed.correlation_id,) * 2]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Manifest.objects.get().correlation_id == completed.correlation_id
