"""Pages to look at first: each page's evidence read in the child, and the suggestions made of it."""

import shutil

import pytest

from bench import review_corpus
from bench.review_corpus import Bundle, Sheet
from extraction import pdf
from extraction.pdf.page_evidence import PageEvidence, printed_number
from extraction.pdf.page_hints import hints
from extraction.pdf.sandbox import stop_idle_children


def numbered(*printed: int, total: int = 10) -> list[PageEvidence]:
    return [
        PageEvidence(number=i, printed=n, printed_total=total, printed_text=f"Page {n} of {total}")
        for i, n in enumerate(printed, 1)
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Claim form\nbody\nPage 3 of 10", (3, 10)),
        ("Claim\n3/10", (3, 10)),
        ("Claim\n\u2013 3 \u2013", (3, 0)),
        ("Paid 3/10 of the sum on 3/10\nbody\nbody\nbody\nbody\nbody\nbody\nend", (0, 0)),
        ("Page 12 of 10", (0, 0)),
    ],
)
def test_it_reads_printed_numbers_from_a_pages_head_or_foot(text, expected):
    assert printed_number(text)[:2] == expected


def test_it_names_a_gap_in_the_printed_numbering_with_its_evidence():
    (hint,) = hints(numbered(1, 2, 3, 5, 6, 7, 8, 9, 10))
    assert hint.kind == "missing_page" and hint.pages == (3, 4)
    assert hint.evidence.startswith("printed page 4 of 10 is missing between PDF pages 3 and 4")
    assert "\u201cPage 5 of 10\u201d" in hint.evidence


def test_it_names_missing_last_pages_after_the_last_one_printed():
    (hint,) = hints(numbered(1, 2, 3, 4, 5, 6, 7, 8))
    assert hint.evidence.startswith("printed pages 9-10 of 10 are missing after PDF page 8")


def test_it_tells_a_repeated_and_a_shuffled_number():
    found = {(h.kind, h.pages) for h in hints(numbered(1, 2, 2, 4, 3, 5, 6, 7, 8, 9, 10))}
    assert found == {("repeated_page", (2, 3)), ("out_of_order", (5,))}


def test_it_starts_a_new_document_at_a_new_total_and_suggests_nothing_for_complete_ones():
    pages = numbered(1, 2, 3, total=3) + numbered(1, 2, total=2)
    assert hints([PageEvidence(**{**vars(p), "number": i}) for i, p in enumerate(pages, 1)]) == []


def test_it_does_not_trust_one_number_among_unread_pages():
    pages = [PageEvidence(number=n, scan_sha256=f"{n:064x}", ink=0.1) for n in range(1, 11)]
    pages[4] = PageEvidence(number=5, printed=5, printed_total=10, printed_text="Page 5 of 10")
    assert {h.kind for h in hints(pages)} == {"no_scan"}


def test_it_suggests_no_gap_where_a_scan_ocr_could_not_read_sits():
    scans = [
        PageEvidence(number=i, printed=n, printed_total=6, printed_text=f"{n}/6", ink=0.05, scan_sha256=f"{i:064x}")
        for i, n in enumerate((1, 2, 3, 0, 5, 6), 1)
    ]
    unread = [PageEvidence(**{**vars(page), "ocr": "read"}) for page in scans]
    assert [h.kind for h in hints(unread)] == []
    assert [h.kind for h in hints(scans)] == ["missing_page"]  # an unnumbered page OCR never read says nothing


@pytest.fixture
def without_tesseract(tmp_path, monkeypatch):
    """A fresh child whose PATH finds no `tesseract`, as on a machine without Debian's tesseract-ocr."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    stop_idle_children()
    yield
    monkeypatch.undo()
    stop_idle_children()  # the next test's child finds tesseract again, if this machine has it


def damaged_scans(tmp_path, name="all"):
    sheets = [Sheet(n, 12) for n in range(1, 13)]
    del sheets[3]  # printed 4 is missing: PDF pages 3 and 4 show 3 and 5
    sheets.insert(5, Sheet(6, 12, rescan=1))  # 6 fed twice: PDF pages 5 and 6
    sheets.insert(8, Sheet(0, 12, scan="blank"))  # PDF page 9
    sheets[10] = Sheet(10, 12, scan="")  # PDF page 11 without its scan
    return review_corpus.write_bundle(Bundle(name, sheets, searchable=False), tmp_path / f"{name}.pdf")


def test_without_tesseract_the_evidence_says_ocr_unavailable_and_the_scans_tell_the_rest(tmp_path, without_tesseract):
    evidence = pdf.read_page_evidence(damaged_scans(tmp_path))
    assert len(evidence) == 13 and evidence[0].scan_sha256 and not evidence[10].scan_sha256
    assert {page.ocr for page in evidence if page.scan_sha256} == {"unavailable"} and evidence[10].ocr == ""
    assert not any(page.printed for page in evidence if page.scan_sha256)  # only the page without a scan has text
    found = {(h.kind, h.pages) for h in pdf.hints(evidence)}
    assert found == {("repeated_page", (5, 6)), ("blank_page", (9,)), ("no_scan", (11,))}


@pytest.mark.skipif(not shutil.which("tesseract"), reason="tesseract is not installed (make ocr installs it)")
def test_with_tesseract_a_number_drawn_only_into_a_scan_shows_the_missing_page(tmp_path):
    evidence = pdf.read_page_evidence(damaged_scans(tmp_path))
    assert evidence[0].ocr == "read" and (evidence[2].printed, evidence[3].printed) == (3, 5)
    found = {h.kind: h for h in pdf.hints(evidence)}
    assert found["missing_page"].pages == (3, 4)
    assert found["missing_page"].evidence.startswith("printed page 4 of 12 is missing between PDF pages 3 and 4")
    assert "(read by OCR)" in found["missing_page"].evidence


def test_it_refuses_an_unreadable_file_with_a_stable_code(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\nnot a pdf at all")
    with pytest.raises(pdf.SandboxError) as raised:
        pdf.read_page_evidence(path)
    assert raised.value.code == "unreadable" and raised.value.permanent
