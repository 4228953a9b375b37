"""Evidence packages stripped after export: the offline verifier fails each with one line naming the problem."""

import json

import pytest
from django.core.management import call_command

from audit import cases
from audit.models import Case
from tests.audit.test_cases import manifest  # noqa: F401 (a fixture)
from tests.audit.test_evidence import chain, edit_index, export, failed, index_of, out, rewrite, verify  # noqa: F401

pytestmark = pytest.mark.django_db
CHANGED = "changed after export"


def test_it_fails_an_asset_removed_and_explained_by_a_made_up_retention_event(chain, out):  # noqa: F811
    package = export(out)
    gone = next(a for a in index_of(package)["assets"] if a["file"])

    def strip(members):
        del members[gone["file"]]
        index = json.loads(members["index.json"])
        entry = next(a for a in index["assets"] if a["name"] == gone["name"])
        entry.update(file=None, omitted="deleted_by_retention")
        index["retention_events"].append({"manifest": gone["manifest_sequence"], "what": "outputs",
                                          "outcome": "deleted", "at": "2026-11-30T00:00:00Z"})
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_package_whose_assets_were_all_removed_and_declared_not_requested(chain, out):  # noqa: F811
    package = export(out)

    def strip(members):
        for name in [n for n in members if n.startswith("assets/")]:
            del members[name]
        index = json.loads(members["index.json"])
        index["includes_assets"] = False
        for entry in index["assets"]:
            entry.update(file=None, omitted="not_exported")
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_date_range_package_with_its_newest_manifest_dropped(chain, out):  # noqa: F811
    package = export(out)

    def drop_newest(members):
        index = json.loads(members["index.json"])
        newest = index["manifests"].pop()
        del members[newest["file"]]
        for asset in [a for a in index["assets"] if a["manifest_sequence"] == newest["sequence"]]:
            index["assets"].remove(asset)
            members.pop(asset["file"], None)
        index["chain_segment"] = [s for s in index["chain_segment"] if s["sequence"] < newest["sequence"]]
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, drop_newest)), "index.json", CHANGED)


def test_it_fails_a_package_whose_index_signature_was_removed(chain, out):  # noqa: F811
    def unsign(members):
        del members["index.sig.json"]
    failed(verify(rewrite(export(out), unsign)), "index.json", "is not signed")


def test_it_fails_a_date_range_index_that_leaves_out_a_manifest_of_its_range(chain, out):  # noqa: F811
    def leave_out(index):
        index["manifests"].pop(1)
    failed(verify(rewrite(export(out), edit_index(leave_out))), "index.json", "manifest 2 was created within the range")


def test_it_fails_a_case_package_missing_an_asset_its_signed_case_map_names(manifest, tmp_path):  # noqa: F811
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get().pk, "--with-assets")
    taken = next(a for a in index_of(package)["assets"] if a["file"])

    def relabel(members):
        del members[taken["file"]]
        index = json.loads(members["index.json"])
        next(a for a in index["assets"] if a["name"] == taken["name"]).update(file=None, omitted="outside_case")
        members["index.json"] = json.dumps(index).encode()
    problems = failed(verify(rewrite(package, relabel)), "cases/case-map-", taken["name"], "does not hold")
    assert any(CHANGED in line for line in problems)
