"""A bundle's name in the input store is derived from its correlation id (`Bundle.input_name`), not stored.

Every intake since the first has stored an input as `<sha[:2]>/<sha>.pdf`; the column only repeated it. The
upgrade refuses, naming the bundles, if a row ever said otherwise: dropping the column then would lose the only
record of where those bytes are. Move such a file to its derived name first, then migrate again."""

from django.db import migrations, models


def refuse_a_name_not_derived(apps, schema_editor):
    Bundle = apps.get_model("extraction", "Bundle")
    elsewhere = [
        (pk, name)
        for pk, sha, name in Bundle.objects.values_list("pk", "correlation_id", "input_name").iterator(chunk_size=2000)
        if name != f"{sha[:2]}/{sha}.pdf"
    ]
    if elsewhere:
        listed = ", ".join(f"bundle {pk} at {name!r}" for pk, name in elsewhere[:20])
        raise RuntimeError(
            f"{len(elsewhere)} bundle(s) have their input stored under a name not derived from their correlation id "
            f"({listed}). Move each file to <sha[:2]>/<sha>.pdf in the input store, then run migrate again."
        )


def store_the_derived_name(apps, schema_editor):
    """Going back, the column returns holding what the property derived."""
    Bundle = apps.get_model("extraction", "Bundle")
    for bundle in Bundle.objects.only("pk", "correlation_id").iterator(chunk_size=2000):
        sha = bundle.correlation_id
        Bundle.objects.filter(pk=bundle.pk).update(input_name=f"{sha[:2]}/{sha}.pdf")


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0015_job_account"),
    ]

    operations = [
        migrations.RunPython(refuse_a_name_not_derived, store_the_derived_name, elidable=False),
        # A default first, so that going back re-adds the column to rows that exist (then filled above).
        migrations.AlterField(
            model_name="bundle",
            name="input_name",
            field=models.CharField(default="", help_text="Name in the private input store", max_length=200),
        ),
        migrations.RemoveField(
            model_name="bundle",
            name="input_name",
        ),
    ]
