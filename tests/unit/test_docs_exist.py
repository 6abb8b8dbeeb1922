"""Every document the code cites is a file of the repository, and no document is cited from outside it.

Code, tests, templates and benchmarks name documents in their docstrings, comments and messages (`VERDICTS.md
"Tables"`, `(ARCHITECTURE.md, import direction)`, `benchmarks/shop/README.md`). A user's clone holds the
repository and nothing beside it, so each cited `.md` name must resolve inside the repository (a name against
the repository root or the citing file's folder), each cited section must be a heading of that document, and no
file may cite the design notes that sit next to the repository in CI (the `shared` folder's `design`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("bot", "tests", "templates", "benchmarks")
SUFFIXES = (".py", ".yml", ".yaml", ".j2", ".sql")
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# A document name: a bare file name (`README.md`), or a path relative to the repository root or to the citing
# file's folder (`benchmarks/shop/README.md`, a parent folder's). Not a template (`comment.md.j2`), not a glob
# (`*.md`), not part of a longer word or path.
DOC = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w-][\w.-]*\.md)(?![\w-]|\.\w)")
# A cited section: `VERDICTS.md "Tables"`, `VERDICTS.md ("Values")`, `(ARCHITECTURE.md, import direction)`.
_NAME = r"(?:[\w.-]+/)*[\w-][\w.-]*\.md"
SECTION = re.compile(
    rf"(?<![\w./-])(?P<quoted_doc>{_NAME})(?:\s*\(\s*|\s+)\"(?P<quoted>[^\"]+)\""
    rf"|\((?P<listed_doc>{_NAME}), (?P<listed>[a-z][\w -]*)\)"
)
# The design notes beside the repository, as a path or as any `.md` under that folder.
SHARED_DOC = re.compile(r"(?:\.\./|/work/)shared/(?:design\b|[\w./-]*\.md\b)|\bshared[/\\]design\b")

# Names that are not documents of the repository, kept as short as the code allows (test_exclusions_are_used
# fails on an entry nothing cites any more).
# Files sqlcanary, its tests or a benchmark write at run time, named where the code says what it writes
# (`check` writes the sticky comment beside the runs, `repair` its report, `sweep report` its table, a test
# its step summary, benchmarks/llm/bench.py its table); a bare name only.
WRITTEN_AT_RUN_TIME = frozenset(
    {"comment.md", "summary.md", "repair_report.md", "sweep-report.md", "table.md"}
)
# (citing file, name) pairs that name a file on purpose without it being one of the repository's documents.
NOT_DOCUMENTS = {
    # a user's KB file, quoted in the refusal message the test expects
    ("tests/integration/test_github_repair_pr.py", "tables.md"),
    # the docstring names the broken link the README once had, which that test exists to forbid
    ("tests/unit/test_readme_links.py", "design/VERDICTS.md"),
}


@dataclass(frozen=True)
class Citation:
    file: Path  # relative to REPO
    line: int
    name: str
    section: str | None = None

    def __str__(self) -> str:
        where = f"{self.file.as_posix()}:{self.line}"
        return f"{where}: {self.name}" + (f" ({self.section!r})" if self.section else "")


def _files() -> Iterator[Path]:
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and not SKIPPED_PARTS.intersection(path.parts):
                yield path


def _python_texts(source: str) -> Iterator[tuple[int, str]]:
    """The prose of a Python file: its comments, docstrings and string constants (f-string parts too). A constant
    that is nothing but a file name or path is a path the code builds at run time (a name it joins to an output
    folder, a file a test writes), not a citation."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and not DOC.fullmatch(node.value.strip())
        ):
            yield getattr(node, "lineno", 0), node.value


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    if ".md" not in source:
        return  # nothing to cite (and parsing every Python file would make this test slow)
    if path.suffix == ".py":
        try:
            yield from _python_texts(source)
            return
        except (SyntaxError, tokenize.TokenError):
            pass  # not Python after all: read it as lines
    yield from enumerate(source.splitlines(), 1)


def citations_in(relative: Path, texts: Iterator[tuple[int, str]]) -> Iterator[Citation]:
    for line, text in texts:
        for match in DOC.finditer(text):
            yield Citation(relative, line + text.count("\n", 0, match.start()), match.group(1))
        for match in SECTION.finditer(text):
            name = match.group("quoted_doc") or match.group("listed_doc")
            section = match.group("quoted") or match.group("listed")
            yield Citation(relative, line + text.count("\n", 0, match.start()), name, section)


def _all_citations() -> list[Citation]:
    found = []
    for path in _files():
        if path.suffix in SUFFIXES:
            found += citations_in(path.relative_to(REPO), _texts(path))
    return found


CITATIONS = _all_citations()


def excluded(citation: Citation) -> bool:
    if citation.name in WRITTEN_AT_RUN_TIME:
        return True
    return (citation.file.as_posix(), citation.name) in NOT_DOCUMENTS


def resolve(citation: Citation) -> Path | None:
    """The cited document: the name against the repository root, else against the citing file's folder; None
    when neither is a file inside the repository."""
    for folder in (REPO, (REPO / citation.file).parent):
        candidate = (folder / citation.name).resolve()
        if candidate.is_relative_to(REPO) and candidate.is_file():
            return candidate
    return None


def headings(document: Path) -> set[str]:
    lines = document.read_text(encoding="utf-8").splitlines()
    return {line.lstrip("#").strip().lower() for line in lines if re.match(r"#{1,6} ", line)}


def test_every_cited_document_exists() -> None:
    missing = [str(c) for c in CITATIONS if not excluded(c) and resolve(c) is None]
    assert not missing, "cited documents that are not in the repository:\n" + "\n".join(missing)


def test_every_cited_section_is_a_heading_of_its_document() -> None:
    absent = []
    for citation in CITATIONS:
        document = resolve(citation) if citation.section and not excluded(citation) else None
        if document is not None and citation.section.strip().lower() not in headings(document):
            absent.append(str(citation))
    assert not absent, "cited sections that are no heading of their document:\n" + "\n".join(absent)


def test_the_scan_sees_the_citations_it_must() -> None:
    """A scan that found nothing would pass the tests above: it must see citations in each kind of file it reads,
    in Python prose, with a section, and with a folder in the name."""
    assert {c.file.suffix for c in CITATIONS} >= {".py", ".sql", ".yml"}
    assert any(c.section for c in CITATIONS)
    assert any("/" in c.name for c in CITATIONS)
    assert any(c.file.parts[0] == "bot" and c.name == "ARCHITECTURE.md" for c in CITATIONS)
    assert any(c.file.parts[0] == "bot" and c.name == "VERDICTS.md" for c in CITATIONS)


def test_a_missing_document_or_section_is_caught() -> None:
    """The rules on a file written here: a name no file has, in prose, is reported; a path the code builds at run
    time is not a citation; a section that is no heading is absent."""
    ghost, verdicts = "NO_SUCH_DOC" + ".md", "VERDICTS" + ".md"  # spelled apart: this file is scanned too
    source = (
        f'"""See {ghost} and {verdicts}."""\n'
        f'out = folder / "{ghost}"  # and docs/{ghost}\n'
        f'# {verdicts} ("No such heading"), ({verdicts}, tables), ({ghost}, intro)\n'
    )
    found = list(citations_in(Path("tests/unit/example.py"), _python_texts(source)))
    names = {(c.line, c.name, c.section) for c in found}
    assert {(1, ghost, None), (1, verdicts, None), (2, f"docs/{ghost}", None)} <= names
    assert not [c for c in found if c.name == ghost and c.line == 2], (
        "a path built at run time is no citation"
    )
    assert {c.name for c in found if resolve(c) is None} == {ghost, f"docs/{ghost}"}
    sections = {(c.name, c.section) for c in found if c.section}
    assert sections == {(verdicts, "No such heading"), (verdicts, "tables"), (ghost, "intro")}
    assert "no such heading" not in headings(REPO / verdicts) and "tables" in headings(REPO / verdicts)


def test_exclusions_are_used() -> None:
    """Every excluded name is still cited somewhere: the list shrinks when the code does."""
    cited = {c.name for c in CITATIONS} | {(c.file.as_posix(), c.name) for c in CITATIONS}
    unused = sorted(str(e) for e in (*WRITTEN_AT_RUN_TIME, *NOT_DOCUMENTS) if e not in cited)
    assert not unused, f"exclusions nothing cites any more (remove them): {unused}"


def test_no_document_is_cited_from_beside_the_repository() -> None:
    """A clone has no `shared` folder next to it: loading datasets from there (with a skip when it is absent) is
    fine, citing its design notes as documentation is not."""
    cited = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary data
        if "shared" not in text:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if SHARED_DOC.search(line):
                cited.append(f"{path.relative_to(REPO).as_posix()}:{number}: {line.strip()}")
    assert not cited, "documents cited from outside the repository:\n" + "\n".join(cited)


def test_the_shared_rule_tells_datasets_from_documents() -> None:
    up = ".." + "/shared"
    assert SHARED_DOC.search(f"{up}/design/VERDICTS.md") and SHARED_DOC.search("/work/shared" + "/design")
    assert SHARED_DOC.search(f"see {up}/notes/GITHUB.md")
    assert not SHARED_DOC.search(f"{up}/datasets/defog") and not SHARED_DOC.search(f"{up}/github/limits.json")
