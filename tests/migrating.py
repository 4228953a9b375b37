"""Tests of data migrations move the test database to a migration and read the models as they were there."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """The database migrated to `targets` (forwards or back); the apps (historical models) as of those targets."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_latest():
    """Every app at its newest migration again: the schema the other tests expect."""
    return migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
