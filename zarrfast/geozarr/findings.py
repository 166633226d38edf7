"""What GeoZarr validation reports: :class:`Finding` records and :class:`GeoZarrError`."""

from __future__ import annotations

from dataclasses import dataclass

from zarrfast.errors import ZarrfastError

__all__ = ["Finding", "GeoZarrError"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One validation finding: a rule a node breaks, how severe, and what is wrong.

    What [zarrfast.geozarr.validate][] returns a list of; ``str(finding)`` is
    ``"<severity> <rule> <path>: <message>"``.  The parameters are also the attributes.

    Parameters
    ----------
    rule : str
        The rule id of ``geozarr-rules.md`` (``"DS5"``; see
        ``zarrfast.geozarr.RULES``).
    severity : {"E", "R", "W"}
        ``"E"`` (error), ``"R"`` (recommended error) or ``"W"`` (warning).
    path : str
        The node the finding is about: ``"/"`` for the root, ``"/s0/data"`` below it.
    message : str
        What is wrong, naming the value or member at fault.

    Examples
    --------
    >>> from zarrfast.geozarr import Finding
    >>> finding = Finding("DS2", "E", "/u", "axis 0 is named 'y' but there is no member 'y'")
    >>> print(finding)
    E DS2 /u: axis 0 is named 'y' but there is no member 'y'
    """

    rule: str
    severity: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity} {self.rule} {self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        """Give the finding as a JSON-ready dict.

        Returns
        -------
        dict of str to str
            ``{"rule": ..., "severity": ..., "path": ..., "message": ...}``.
        """
        return {"rule": self.rule, "severity": self.severity, "path": self.path,
                "message": self.message}


class GeoZarrError(ZarrfastError):
    """A hierarchy (or TileMatrixSet) breaks GeoZarr rules; ``findings`` lists them.

    Raised by [zarrfast.geozarr.check][] and [zarrfast.geozarr.get_tile_matrix_set][];
    a [zarrfast.errors.ZarrfastError][].

    Parameters
    ----------
    message : str
        The message (it lists the findings).
    findings : list of Finding, optional
        The errors found, kept as the ``findings`` attribute (a new list; empty by
        default).
    """

    def __init__(self, message: str, findings: list[Finding] | None = None) -> None:
        super().__init__(message)
        self.findings: list[Finding] = list(findings or [])
