"""inspect_pdf: good files accepted with their page count, hostile ones refused with a reason, and what an intake
policy decides on (active content, attachments, trailing data, an owner password, repair) found, kind and object.

Every hostile file is small, or read under a small limit, so each refusal is quick by design.
"""

import hashlib

import pytest

from extraction.pdf import Inspection, Limits, Refusal, inspect_pdf
from tests import pdfs, pdfs_hostile, pdfs_intake

SMALL = Limits(max_stream_bytes=1024**2, max_pages=3)

HOSTILE = [  # factory, expected code, limits
    (pdfs.empty, "empty", Limits()),
    (pdfs.truncated, "truncated", Limits()),
    (pdfs.png_renamed, "not_pdf", Limits()),
    (pdfs.zip_renamed, "not_pdf", Limits()),
    (pdfs.html_renamed, "not_pdf", Limits()),
    (pdfs.elf_renamed, "not_pdf", Limits()),
    (pdfs.text_renamed, "not_pdf", Limits()),
    (pdfs_intake.junk_past_slack, "no_pdf_header", Limits()),
    (pdfs_intake.header_missing, "no_pdf_header", Limits()),
    (pdfs.zip_appended, "polyglot", Limits()),
    (pdfs.encrypted, "encrypted", Limits()),
    (pdfs.flate_bomb, "stream_too_large", SMALL),
    (pdfs.flate_bomb_in_ascii85, "stream_too_large", SMALL),
    (pdfs.huge_image, "image_too_large", Limits()),
    (pdfs.negative_dimensions, "image_too_large", Limits()),
    (pdfs_intake.no_catalog, "unreadable", Limits()),
    (pdfs.absurd_page_count, "too_many_pages", Limits()),
    (pdfs.five_pages, "too_many_pages", SMALL),
    (pdfs.no_pages, "no_pages", Limits()),
    (pdfs.huge_length, "stream_too_large", Limits()),
    (pdfs.jbig2_image, "filter_not_allowed", Limits(allowed_filters=("FlateDecode",))),
]


FOUND = [  # factory, the kinds of finding it holds, the objects ("n g") of the first kind
    (pdfs.javascript_open_action, {"javascript"}, ["1 0"]),
    (pdfs.launch_action, {"launch"}, ["1 0"]),
    (pdfs.embedded_file, {"embedded_file", "executable"}, ["1 0"]),
    (pdfs.xfa_form, {"xfa_form"}, ["1 0"]),
    (pdfs.file_attachment, {"embedded_file", "executable"}, ["4 0"]),
    (pdfs.rich_media, {"rich_media"}, ["4 0"]),
    (pdfs_hostile.submit_form, {"submit_form"}, ["1 0"]),
    (pdfs_hostile.import_data, {"import_data"}, ["1 0"]),
    (pdfs_hostile.goto_remote, {"remote_goto"}, ["1 0"]),
    (pdfs_hostile.uri_link, {"uri"}, ["1 0"]),
    (pdfs.garbage_after_eof, {"trailing_data"}, []),
    (pdfs.encrypted_without_user_password, {"owner_password"}, ["6 0"]),
    (pdfs.damaged_xref, {"repaired"}, []),
]


def refusal(path, limits=Limits()) -> Refusal:
    with pytest.raises(Refusal) as caught:
        inspect_pdf(path, limits)
    return caught.value


def kinds(path) -> set[str]:
    return {f["kind"] for f in inspect_pdf(path).findings}


@pytest.mark.parametrize("factory, found, objects", FOUND, ids=[f[0].__name__ for f in FOUND])
def test_it_finds_what_a_policy_decides_on_with_its_kind_and_objects(tmp_path, factory, found, objects):
    findings = inspect_pdf(factory(tmp_path)).findings

    assert {f["kind"] for f in findings} == found
    assert findings[0]["objects"] == objects and findings[0]["what"]


def test_it_lists_an_attached_file_with_its_name_sha256_and_size(tmp_path):
    (attached,) = inspect_pdf(pdfs.embedded_file(tmp_path)).attachments

    assert attached == {
        "name": "a.exe",
        "sha256": hashlib.sha256(b"MZ payload").hexdigest(),
        "size": 10,
        "pdf": False,
        "object": "2 0",
    }


def test_it_finds_nothing_in_a_plain_file(tmp_path):
    inspection = inspect_pdf(pdfs.jpeg_rgb(tmp_path))

    assert (inspection.findings, inspection.attachments) == ([], [])


@pytest.mark.parametrize("factory, code, limits", HOSTILE, ids=[h[0].__name__ for h in HOSTILE])
def test_it_refuses_a_hostile_file_with_its_code_and_a_sentence(tmp_path, factory, code, limits):
    refused = refusal(factory(tmp_path), limits)

    assert refused.code == code
    assert refused.message[0].isupper() and refused.message.endswith(".") and len(refused.message.split()) >= 4


@pytest.mark.parametrize("factory, pages", pdfs.GOOD.items(), ids=[f.__name__ for f in pdfs.GOOD])
def test_it_accepts_a_good_file_with_its_page_count(tmp_path, factory, pages):
    assert inspect_pdf(factory(tmp_path)) == Inspection(pages=pages, pdf_version="1.3", mime="application/pdf")


@pytest.mark.parametrize(
    "factory, kind",
    [
        (pdfs.png_renamed, "a PNG image"),
        (pdfs.zip_renamed, "a ZIP archive"),
        (pdfs.html_renamed, "an HTML document"),
        (pdfs.elf_renamed, "an ELF executable"),
        (pdfs.text_renamed, "plain text"),
    ],
)
def test_it_names_what_a_file_that_is_not_a_pdf_looks_like(tmp_path, factory, kind):
    assert refusal(factory(tmp_path)).message == f"The file is not a PDF; it looks like {kind}."


@pytest.mark.parametrize(
    "factory, message",
    [
        (
            pdfs_intake.junk_past_slack,
            "The file's `%PDF-` header comes after 1024 bytes of other data; "
            "Pagetrail accepts at most 1023 bytes before it.",
        ),
        (
            pdfs_intake.header_missing,
            "The file holds PDF objects but has no `%PDF-` header in its first 1024 bytes; "
            "Pagetrail accepts only files that start as a PDF.",
        ),
    ],
)
def test_it_says_a_pdf_whose_header_is_missing_or_late_is_refused_for_that(tmp_path, factory, message):
    assert refusal(factory(tmp_path)).message == message


def test_it_judges_by_content_not_by_file_name(tmp_path):
    renamed = tmp_path / "scan.png"
    renamed.write_bytes(pdfs.jpeg_rgb(tmp_path).read_bytes())

    assert inspect_pdf(renamed).pages == 1


def test_it_refuses_a_file_over_the_size_limit(tmp_path):
    path = pdfs.jpeg_rgb(tmp_path)

    assert refusal(path, Limits(max_bytes=path.stat().st_size - 1)).code == "too_large"


def test_it_accepts_scanner_padding_after_the_end_marker(tmp_path):
    path = tmp_path / "padded.pdf"
    path.write_bytes(pdfs.jpeg_rgb(tmp_path).read_bytes() + b"\x00" * 512 + b"\r\n")

    assert inspect_pdf(path).pages == 1


@pytest.mark.parametrize("padding", [b"\x00" * 20481, b"\r\n" + b" " * (3 * 1024 * 1024) + b"\x00\n"])
def test_it_accepts_padding_of_any_length_after_the_end_marker(tmp_path, padding):
    """pypdf's `selenium-pypdf-issue-177` ends in 20 KiB of NULs; padding holds nothing, so it has no limit
    (the second is longer than the blocks the end is read backwards in)."""
    path = tmp_path / "padded.pdf"
    path.write_bytes(pdfs.jpeg_rgb(tmp_path).read_bytes() + padding)

    assert inspect_pdf(path).pages == 1


def test_it_finds_data_after_the_end_marker_however_much_padding_follows_it(tmp_path):
    path = tmp_path / "padded.pdf"
    path.write_bytes(pdfs.jpeg_rgb(tmp_path).read_bytes() + b"<script>1</script>" + b"\x00" * (2 * 1024 * 1024))

    assert "trailing_data" in kinds(path)  # and `repaired`: qpdf looks for the pointer in the last KiB only


def test_it_names_the_disallowed_filter(tmp_path):
    assert "JBIG2Decode" in refusal(pdfs.jbig2_image(tmp_path), Limits(allowed_filters=("FlateDecode",))).message


@pytest.mark.parametrize(
    "factory", [pdfs_intake.made_up_filter_image, pdfs_intake.made_up_filter_content, pdfs_intake.string_filter]
)
def test_it_accepts_a_stream_whose_filter_is_no_pdf_filter_as_viewers_do(tmp_path, factory):
    # No reader decodes such a stream, so no decoder is exposed to it; extraction says what is missing.
    assert inspect_pdf(factory(tmp_path)).pages == 1


def test_it_accepts_a_made_up_filter_name_also_under_a_narrower_allow_list(tmp_path):
    assert inspect_pdf(pdfs_intake.made_up_filter_image(tmp_path), Limits(allowed_filters=("FlateDecode",))).pages == 1


def test_it_accepts_jbig2_images_as_viewers_do(tmp_path):
    assert inspect_pdf(pdfs.jbig2_image(tmp_path)).pages == 1


def test_it_accepts_a_flate_stream_that_inflates_to_the_limit(tmp_path):
    assert inspect_pdf(pdfs.flate_bomb(tmp_path, mib=1), SMALL).pages == 1


def test_it_refuses_a_flate_stream_that_inflates_past_the_limit(tmp_path):
    assert refusal(pdfs.flate_bomb(tmp_path, mib=2), SMALL).code == "stream_too_large"


def test_it_refuses_an_image_whose_declared_size_is_over_the_stream_limit(tmp_path):
    # The 40x24 gray JPEG takes 490 bytes in the file but declares 960 decoded bytes.
    assert refusal(pdfs.jpeg_gray(tmp_path), Limits(max_stream_bytes=512)).code == "stream_too_large"


def test_it_refuses_an_image_with_more_pixels_than_the_limit(tmp_path):
    assert refusal(pdfs.jpeg_rgb(tmp_path), Limits(max_pixels=48 * 32 - 1)).code == "image_too_large"


def test_it_accepts_as_many_pages_as_the_limit(tmp_path):
    assert inspect_pdf(pdfs.five_pages(tmp_path), Limits(max_pages=5)).pages == 5


def test_it_says_a_file_that_needs_a_password_does_not_open_without_one(tmp_path):
    assert refusal(pdfs.encrypted(tmp_path)).message == (
        "The file is encrypted and does not open with an empty password; Pagetrail cannot read PDFs that need a "
        "password."
    )


def test_it_says_bytes_after_the_end_marker_that_are_not_padding_are_not_padding(tmp_path):
    (found,) = inspect_pdf(pdfs.garbage_after_eof(tmp_path)).findings

    assert found["detail"] == "The file has 26 bytes after its PDF end-of-file marker that are not padding."


def test_it_accepts_the_standard_crypt_filter(tmp_path):
    assert inspect_pdf(pdfs_intake.crypt_identity_stream(tmp_path)).pages == 1


# ---------- what viewers open: accepted, and how it was read recorded ----------


def test_it_accepts_a_stream_whose_length_is_an_indirect_integer(tmp_path):
    assert inspect_pdf(pdfs_intake.indirect_length(tmp_path)).pages == 1


def test_it_accepts_indirect_objects_of_every_kind(tmp_path):
    assert inspect_pdf(pdfs_intake.indirect_scalars(tmp_path)).pages == 1


def test_it_says_a_file_whose_encryption_protects_only_attachments_holds_active_content(tmp_path):
    """Viewers open it without a password; its content is in the clear, its embedded files are not."""
    refused = refusal(pdfs_intake.encrypted_attachments_only(tmp_path))
    assert (refused.code, refused.message) == (
        "active_content",
        (
            "The file's encryption is for embedded files (attachments), which have a password of their own; "
            "Pagetrail does not accept PDFs whose attachments it cannot read."
        ),
    )


def test_it_opens_a_file_encrypted_with_the_empty_user_password_and_records_it(tmp_path):
    inspection = inspect_pdf(pdfs.encrypted_without_user_password(tmp_path))

    assert (inspection.pages, inspection.encrypted, inspection.repaired) == (1, True, False)


@pytest.mark.parametrize("factory", [pdfs.damaged_xref, pdfs.xref_prev_loop, pdfs_intake.damaged_xref])
def test_it_reads_a_cross_reference_table_qpdf_repairs_and_records_it(tmp_path, factory):
    inspection = inspect_pdf(factory(tmp_path))

    assert (inspection.pages, inspection.repaired) == (1, True)


def test_it_records_a_sound_file_as_not_repaired(tmp_path):
    assert inspect_pdf(pdfs.jpeg_rgb(tmp_path)).repaired is False


def test_it_still_refuses_a_length_over_the_limit_in_a_repaired_file(tmp_path):
    assert refusal(pdfs_intake.damaged_xref(tmp_path, length=10**12)).code == "stream_too_large"


@pytest.mark.parametrize("size", [1, 8, 1023])
def test_it_tolerates_a_header_anywhere_in_the_first_kib_and_records_how_much_came_before(tmp_path, size):
    inspection = inspect_pdf(pdfs_intake.junk_before_header(tmp_path, size))

    assert (inspection.pages, inspection.leading_bytes, inspection.repaired) == (1, size, False)


def test_it_still_refuses_a_length_over_the_limit_after_leading_bytes(tmp_path):
    assert refusal(pdfs_intake.junk_before_huge_length(tmp_path)).code == "stream_too_large"


def test_it_does_not_leak_the_file_path_into_messages(tmp_path):
    assert str(tmp_path) not in refusal(pdfs_intake.no_catalog(tmp_path)).message


@pytest.mark.parametrize("bits", [40, 48])
def test_it_opens_a_revision_4_file_with_a_short_rc4_key_and_the_empty_password_as_acrobat_does(tmp_path, bits):
    inspection = inspect_pdf(pdfs_intake.rc4_short_key_revision_4(tmp_path, bits))

    assert (inspection.pages, inspection.encrypted, inspection.repaired) == (1, True, True)


def test_it_still_refuses_a_short_rc4_key_whose_user_password_is_not_empty(tmp_path):
    path = pdfs_intake.rc4_short_key_revision_4(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"/U <", b"/U <00", 1).replace(b"00000000> /StmF", b"000000> /StmF", 1))

    assert refusal(path).code == "encrypted"


def test_it_reads_a_file_whose_encryption_entry_is_no_dictionary_as_not_encrypted_and_repaired(tmp_path):
    inspection = inspect_pdf(pdfs_intake.encrypt_not_a_dictionary(tmp_path))

    assert (inspection.pages, inspection.encrypted, inspection.repaired) == (1, False, True)


def test_it_reads_a_file_whose_object_numbers_qpdf_finds_too_high_for_its_length_and_records_it(tmp_path):
    inspection = inspect_pdf(pdfs_intake.catalog_numbered_high(tmp_path))

    assert (inspection.pages, inspection.repaired) == (1, True)


@pytest.mark.parametrize("factory", [pdfs.page_tree_cycle, pdfs_intake.page_tree_loop, pdfs_intake.page_tree_too_deep])
def test_it_reads_a_page_tree_qpdf_refuses_as_viewers_do_and_records_it_as_repaired(tmp_path, factory):
    inspection = inspect_pdf(factory(tmp_path))

    assert (inspection.pages, inspection.repaired) == (1, True)


# ---------- active content however it is spelled or nested ----------

ACTIVE_SPELLINGS = [  # (page entry, as the raw file spells it)
    b"/A#41 << /S /J#61vaScript /J#53 (app.alert(1)) >>",  # /AA and /JavaScript, /JS in hex escapes
    b"/Annots [ << /Subtype /FileAttachment /FS << /E#46 << /F 5 0 R >> >> >> ]",
    b"/X << /Y [ << /Z << /S /Launch /F (calc.exe) >> >> ] >>",
    b"/X << /Type /Embedded#46ile >>",
    b"/X [ [ [ << /XF#41 (form) >> ] ] ]",
]


@pytest.mark.parametrize("entry", ACTIVE_SPELLINGS)
def test_it_finds_active_content_spelled_with_escapes_or_nested_deep(tmp_path, entry):
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R %s >>" % entry
    path = pdfs.write(
        tmp_path / "active.pdf",
        pdfs.raw_pdf(pdfs.ONE_PAGE[:2] + [page, pdfs.raw_stream(b"0 0 m"), pdfs.raw_stream(b"attached")]),
    )

    assert kinds(path) & {"javascript", "embedded_file", "launch", "xfa_form"}


def test_it_accepts_a_pdf_whose_text_merely_mentions_active_names(tmp_path):
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/PieceInfo << /Note (see /JS and /Launch and /EmbeddedFiles in the spec) >> >>"
    )
    path = pdfs.write(tmp_path / "mentions.pdf", pdfs.raw_pdf(pdfs.ONE_PAGE[:2] + [page, pdfs.raw_stream(b"0 0 m")]))

    assert inspect_pdf(path).pages == 1


# ---------- the hostile-input policy (README: Intake) ----------


@pytest.mark.parametrize(
    "factory, kind",
    [
        (pdfs_hostile.fake_incremental_update, "trailing_data"),
        (pdfs_hostile.long_fake_update, "trailing_data"),
        (pdfs_hostile.fake_update_with_keywords, "trailing_data"),
        (pdfs_hostile.fake_update_pointing_back, "trailing_data"),
        (pdfs_hostile.long_fake_update_pointing_back, "trailing_data"),
        (pdfs_hostile.fake_update_with_a_real_section, "trailing_data"),
        (pdfs_hostile.long_fake_update_with_a_real_section, "trailing_data"),
        (pdfs_hostile.fake_update_with_a_real_section_after_junk, "trailing_data"),
        (pdfs_intake.payload_posing_as_a_stream_end, "trailing_data"),
        (pdfs_hostile.submit_form, "submit_form"),
        (pdfs_hostile.import_data, "import_data"),
        (pdfs_hostile.goto_remote, "remote_goto"),
    ],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_it_finds_what_the_intake_policy_decides_on(tmp_path, factory, kind):
    assert kind in kinds(factory(tmp_path))


def test_it_refuses_a_zip_polyglot_whatever_the_policy(tmp_path):
    assert refusal(pdfs_hostile.zip_polyglot(tmp_path)).code == "polyglot"


@pytest.mark.parametrize(
    "factory",
    [
        pdfs_hostile.real_incremental_update,
        pdfs_hostile.large_real_update,
        pdfs_hostile.real_update_after_junk,
        pdfs_hostile.linearized,
        pdfs_hostile.xref_stream,
        pdfs_hostile.uri_link,
    ],
)
def test_it_accepts_a_real_incremental_update_and_a_plain_link(tmp_path, factory):
    inspection = inspect_pdf(factory(tmp_path))

    assert inspection.pages == 1 and {f["kind"] for f in inspection.findings} <= {"uri"}


@pytest.mark.parametrize(
    "factory",
    [pdfs_intake.eof_inside_a_stream, pdfs_intake.commented_deletion_update, pdfs_intake.hybrid_update],
    ids=lambda f: f.__name__,
)
def test_it_accepts_revisions_as_real_writers_leave_them(tmp_path, factory):
    """A marker inside a stream's data, a comment before a section, two sections in one revision:
    readers skip them, and pdf.js, pypdf and qpdf test files that poppler opens hold each."""
    assert inspect_pdf(factory(tmp_path)).pages == 1


@pytest.mark.parametrize("remnant", [b"", b"%\n"])
def test_it_accepts_a_file_that_lost_only_its_end_marker(tmp_path, remnant):
    assert inspect_pdf(pdfs_intake.end_marker_missing(tmp_path, remnant)).pages == 1


def test_it_still_refuses_a_file_cut_short_or_with_data_after_its_pointer(tmp_path):
    assert refusal(pdfs_intake.cut_after_startxref_keyword(tmp_path)).code == "truncated"
    assert refusal(pdfs.truncated(tmp_path)).code == "truncated"
