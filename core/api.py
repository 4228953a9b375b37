"""What every app's API shares: the row ids a path takes, and the refusal of a query parameter an operation does
not take."""

from typing import Annotated

from ninja import Path

# An id the database can hold: a larger number is a bad request, not a database overflow (500).
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def unknown_parameters_message(request, known: set[str]) -> str:
    """Why the request's query is refused (its parameters not in `known`), or "" when it is not."""
    unknown = sorted(set(request.GET) - known)
    takes = ", ".join(sorted(known)) or "none"
    return f"Unknown query parameter(s): {', '.join(unknown)[:200]}; this operation takes {takes}." if unknown else ""
