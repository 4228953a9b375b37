"""Compare-and-set on one row: how every model here changes state, so a duplicated task or a second click
changes nothing."""

from typing import cast

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now


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


class Wakeable:
    """For a model with a `last_woken_at` column that a reconciler re-drives: one wake-up call per pass, however
    many reconcilers pass at once (the second finds the column moved on)."""

    last_woken_at: object

    def mark_woken(self, at=None) -> bool:
        row = cast(models.Model, self)  # a mixin of models only
        return update_if(row, Q(last_woken_at=self.last_woken_at), last_woken_at=at or Now())
