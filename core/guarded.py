"""Compare-and-set on one row: how every model here changes state, so a duplicated task or a second click
changes nothing."""

from django.db import models
from django.db.models import Q


def update_if(row: models.Model, condition: Q, **changes) -> bool:
    """Write `changes` to `row` only if it still matches `condition`; return whether this call won.

    On a win `row` holds what was written, without a query to read it back; values the database computes
    (`Now()`, `F()`) are left deferred, read from it if they are ever used. On a loss `row` is unchanged.
    """
    won = type(row)._default_manager.filter(condition, pk=row.pk).update(**changes) == 1
    if won:
        for name, value in changes.items():
            if hasattr(value, "resolve_expression"):
                row.__dict__.pop(name, None)
            else:
                setattr(row, name, value)
    return won
