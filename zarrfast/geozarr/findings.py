"""What GeoZarr validation reports: :class:`Finding` records and :class:`GeoZarrError`."""

from __future__ import annotations

from dataclasses import dataclass

from zarrfast.errors import ZarrfastError

__all__ = ["Finding", "GeoZarrError"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One validation finding.

    Attributes
    ----------
    rule
        The rule id of ``geozarr-rules.md`` (``"DS5"``).
    severity
        ``"E"`` (error), ``"R"`` (recommended error) or ``"W"`` (warning).
    path
        The node the finding is about: ``"/"`` for the root, ``"/s0/data"`` below it.
    message
        What is wrong, naming the value or member at fault.
    """

    rule: str
    severity: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity} {self.rule} {self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "severity": self.severity, "path": self.path,
                "message": self.message}


class GeoZarrError(ZarrfastError):
    """A hierarchy (or TileMatrixSet) breaks GeoZarr rules; ``findings`` lists them."""

    def __init__(self, message: str, findings: list[Finding] | None = None) -> None:
        super().__init__(message)
        self.findings: list[Finding] = list(findings or [])
