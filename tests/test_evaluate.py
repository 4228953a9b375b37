"""The evaluation harness end to end: scratch deployments, real workers, the simulator over HTTP."""

import json

import pytest
from django.core.management import call_command

from tests import pdfs
from tests.conftest import PRODUCTION

pytestmark = [pytest.mark.slow, pytest.mark.skipif(PRODUCTION, reason="runs its own embedded deployments")]


def test_it_runs_one_corpus_through_both_providers_and_checks_the_invariants(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs.mixed(corpus), pdfs.reused_on_three_pages(corpus)
    (corpus / "renamed.pdf").write_bytes(b"PK\x03\x04 not a pdf")
    call_command("evaluate", "--corpus", corpus, "--concurrency", "1", "--json", tmp_path / "out.json")
    results = json.loads((tmp_path / "out.json").read_text())
    for provider in ("local", "infrai"):
        result = results[provider]
        assert (result["bundles"], result["refused"], result["completed"]) == (3, 1, 2)
        assert all(result["checks"].values())
        assert result["extraction_s"]["p50"] > 0 and result["queue_wait_s"]["p95"] >= result["queue_wait_s"]["p50"]
    printed = capsys.readouterr().out
    assert "no duplicate provider job" in printed and "local" in printed and "infrai" in printed
