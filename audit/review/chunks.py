"""The review page shows its cards a chunk at a time: a bundle of 254 pages drawn whole is a document
85,000 px tall, slow to lay out and far from its own forms. The index still names every page; a page
outside the chunk on screen is a link to its own chunk, so everything works without a script."""

from dataclasses import dataclass

CHUNK = 40  # cards drawn at once: about 11,000 px at 1280 px wide, a few seconds of scrolling


def first_of_chunk(number: int) -> int:
    """The first page of the chunk holding page `number` (chunks start at 1, 41, 81, ...)."""
    return (max(number, 1) - 1) // CHUNK * CHUNK + 1


def page_href(number: int, shown_from: int) -> str:
    """A link to page `number` from a review page showing the chunk that starts at `shown_from`:
    a fragment when its card is on screen (no reload), else its chunk with the fragment."""
    start = first_of_chunk(number)
    return f"#page-{number}" if start == shown_from else f"?from={start}#page-{number}"


@dataclass(frozen=True)
class Chunk:
    first: int  # first page shown
    last: int  # last page shown
    page_count: int

    @classmethod
    def asked(cls, asked: str | None, page_count: int) -> "Chunk":
        """The chunk holding page `?from=`: anything but a page number shows the first chunk, a number past
        the end the last one (an old link to a bundle since re-extracted stays usable)."""
        number = int(asked) if asked and asked.isdigit() and len(asked) < 10 else 1
        first = first_of_chunk(min(number, max(page_count, 1)))
        return cls(first, min(first + CHUNK - 1, page_count), page_count)

    @property
    def previous(self) -> int | None:
        return self.first - CHUNK if self.first > 1 else None

    @property
    def next(self) -> int | None:
        return self.first + CHUNK if self.last < self.page_count else None

    @property
    def next_last(self) -> int:
        return min(self.first + 2 * CHUNK - 1, self.page_count)

    @property
    def size(self) -> int:
        return CHUNK

    def of(self, pages: list) -> list:
        """The pages (numbered from 1, in order) this chunk shows."""
        return pages[self.first - 1 : self.last]
