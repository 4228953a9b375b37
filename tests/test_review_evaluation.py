"""`make evaluate-review`: the page hints meet their goals on the evaluation corpus, read in the real PDF child."""

import pytest

from bench import review_hints

pytestmark = pytest.mark.slow


def test_every_kind_of_hint_meets_its_goal_on_the_corpus(tmp_path, capsys):
    assert review_hints.main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "missing_page (text pages)" in printed and "every goal met" in printed
    assert "240-page bundle without hints (0 found)" in printed
