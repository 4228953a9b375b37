"""Values as a person reads them: durations, sizes, page ranges, short ids, activity details."""

from datetime import timedelta

from core import display


def test_it_writes_page_lists_as_ranges():
    assert display.page_ranges([12, 4, 9, 10, 11, 4]) == "4, 9-12"
    assert display.page_ranges([]) == ""


def test_it_writes_durations_in_the_unit_that_reads_best():
    assert display.duration(timedelta(microseconds=69153)) == "69 ms"
    assert display.duration(3.44) == "3.4 s"
    assert display.duration(75) == "1 min 15 s"
    assert display.duration(timedelta(hours=2, minutes=5)) == "2 h 5 min"
    assert display.duration(None) == "–"


def test_it_writes_sizes_in_powers_of_1024():
    assert (display.size(512), display.size(1536), display.size(5 * 1024**2)) == ("512 bytes", "1.5 KB", "5.0 MB")


def test_a_short_id_keeps_the_whole_id_in_its_title():
    cid = "ab" * 32
    assert display.short_id(cid) == f'<code class="short-id" title="{cid}">{cid[:12]}</code>'


def test_activity_details_read_as_words():
    assert display.details({"pages": [4, 9, 10], "with_assets": True, "scope": "everything"}) == (
        "pages: 4, 9-10; with assets: yes; scope: everything"
    )
    assert display.details(None) == ""


def test_a_time_reads_with_its_zone(settings):
    from datetime import UTC, datetime

    from django.utils import formats, timezone

    at = datetime(2026, 12, 2, 15, 28, 46, tzinfo=UTC)
    assert display.timestamp(at) == "2026-12-02 15:28:46 UTC"
    settings.TIME_ZONE = "Europe/Zurich"
    with timezone.override("Europe/Zurich"):
        assert display.timestamp(at) == "2026-12-02 16:28:46 CET"
        assert formats.date_format(timezone.localtime(at), "DATETIME_FORMAT") == "2026-12-02 16:28:46 CET"
