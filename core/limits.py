"""The limits every PDF child runs under, from settings: intake, extraction and previews alike."""

from django.conf import settings

from extraction import pdf


def configured_limits() -> pdf.Limits:
    """Intake and extraction limits from settings (the pdf package itself knows nothing of Django)."""
    return pdf.Limits(
        max_bytes=settings.PAGETRAIL_MAX_UPLOAD_BYTES,
        max_pages=settings.PAGETRAIL_MAX_PAGES,
        max_pixels=settings.PAGETRAIL_MAX_IMAGE_PIXELS,
        max_stream_bytes=settings.PAGETRAIL_MAX_STREAM_BYTES,
        cpu_seconds=settings.PAGETRAIL_CHILD_CPU_SECONDS,
        memory_bytes=settings.PAGETRAIL_CHILD_MEMORY_BYTES,
        wall_seconds=settings.PAGETRAIL_CHILD_WALL_SECONDS,
        child_reuse=settings.PAGETRAIL_CHILD_REUSE,
    )
