"""A suite as data: what a check's head reader (bot.check.head_reader) parsed, handed to the check and to the
head's `sqlcanary run` as JSON (`--suite-data`), so that only the reader, which holds nothing, parses the head's
YAML. Its cases and settings are validated by their own models when read."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from bot.base.errors import ResultFileError
from bot.base.results import FrozenModel
from bot.cases.model import Case, Suite, SuiteSettings

MAX_BYTES = 256 * 1024 * 1024  # a suite of 100,000 cases is well below


class SuiteDoc(FrozenModel):
    """A Suite as data (bot.cases.model.Suite), field for field: its cases and settings validated by their own
    models, its paths as strings in JSON. A field Suite gains and this lacks fails loudly (unknown keys)."""

    name: str
    root: Path
    databases: dict[str, tuple[Path, ...]]
    settings: SuiteSettings
    cases: tuple[Case, ...]
    content_hash: str
    files: tuple[Path, ...]
    location: Path
    fixture_digests: dict[str, str]  # what the reader read: the run loads those bytes or nothing

    @classmethod
    def of(cls, suite: Suite) -> SuiteDoc:
        return cls(**{f.name: getattr(suite, f.name) for f in fields(suite)})

    def suite(self) -> Suite:
        return Suite(**dict(self))


def read_suite_doc(path: str | Path, location: str | Path) -> Suite:
    """The suite in the file `path` (written by the check), which must be the suite at `location`: a
    ResultFileError when it is not one, or too large; a RuntimeError (a bug of ours) when it is another suite."""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ResultFileError(f"cannot read the suite data: {exc.strerror}", path=str(path)) from exc
    if len(data) > MAX_BYTES:
        raise ResultFileError(f"the suite data is larger than {MAX_BYTES:,} bytes", path=str(path))
    try:
        doc = SuiteDoc.model_validate_json(data)
    except ValueError as exc:
        raise ResultFileError(f"not suite data: {str(exc)[:2000]}", path=str(path)) from None
    if Path(doc.location).resolve() != Path(location).resolve():
        raise RuntimeError(f"the suite data {path} is of {doc.location}, not of {location}")
    return doc.suite()
