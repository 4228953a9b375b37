"""Links between the review page's chunks (audit/review/chunks.py), for its template."""

from django import template

from audit.review import chunks

register = template.Library()


@register.filter
def page_href(number: int, shown_from: int) -> str:
    """`{{ page.number|page_href:chunk.first }}`: where a link to that page points."""
    return chunks.page_href(int(number), int(shown_from))
