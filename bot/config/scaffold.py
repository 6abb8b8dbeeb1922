"""`sqlcanary init [DIR]`: a project that runs green at once, copied from templates/init (shipped in the wheel as
bot/templates/init): sqlcanary.yml, a suite with two cases over a tiny fixture, a KB of two queries, an example
`command:` agent that answers from it and says which lines it used, the pull-request workflow, and a .gitignore
for sqlcanary's output (written only where DIR has none: a .gitignore of your own is kept, and `gitignore_hint`
says what it lacks).

The workflow goes to the repository's `.github/workflows/` (DIR's own when DIR is in no git repository), with the
action's `config:` input naming DIR's sqlcanary.yml. Nothing is overwritten: one file that exists already and
nothing is written."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import ConfigError
from bot.base.git import repo_root
from bot.base.templating import templates_dir

# (file under templates/init, where it goes relative to DIR)
PROJECT_FILES: tuple[tuple[str, str], ...] = (
    ("sqlcanary.yml", "sqlcanary.yml"),
    ("suite.yml", "suite.yml"),
    ("cases/examples.yml", "cases/examples.yml"),
    ("fixtures/shop.sql", "fixtures/shop.sql"),
    ("kb/queries/customers_per_country.sql", "kb/queries/customers_per_country.sql"),
    ("kb/queries/revenue_2025.sql", "kb/queries/revenue_2025.sql"),
    ("agent.py", "agent.py"),
)
EXECUTABLE = ("agent.py",)
GITIGNORE = ("gitignore", ".gitignore")  # kept when there is one: never a reason to refuse
WORKFLOW_TEMPLATE = "workflow.yml"
WORKFLOW_FILE = ".github/workflows/sqlcanary.yml"  # relative to the repository root
CONFIG_PLACEHOLDER = "__SQLCANARY_CONFIG__"


@dataclass(frozen=True)
class Planned:
    target: Path
    text: str
    executable: bool = False
    optional: bool = False  # skipped, not refused, when the file exists


def template_text(name: str) -> str:
    """A file of templates/init, from the templates this sqlcanary ships (bot.base.templating.templates_dir)."""
    return (templates_dir() / "init" / name).read_text(encoding="utf-8")


def _root_of(folder: Path) -> Path:
    """The git repository holding `folder` (which may not exist yet), else `folder` itself."""
    existing = next((p for p in (folder, *folder.parents) if p.is_dir()), None)
    root = repo_root(existing) if existing is not None else None
    return root if root is not None else folder


def plan_init(folder: Path) -> list[Planned]:
    """Every file `init` would write into `folder` (absolute), and its text."""
    folder = folder.absolute()
    out = [
        Planned(folder / target, template_text(name), executable=target in EXECUTABLE)
        for name, target in PROJECT_FILES
    ]
    root = _root_of(folder.resolve() if folder.exists() else folder)
    config = Path(os.path.relpath(folder.resolve() / "sqlcanary.yml", root)).as_posix()
    workflow = template_text(WORKFLOW_TEMPLATE).replace(CONFIG_PLACEHOLDER, config)
    out.append(Planned(root / WORKFLOW_FILE, workflow))
    name, target = GITIGNORE
    out.append(Planned(folder / target, template_text(name), optional=True))
    return out


def gitignore_hint(folder: Path) -> str | None:
    """What the .gitignore in `folder` lacks of the lines `init` would have written (None: nothing)."""
    path = folder / GITIGNORE[1]
    try:
        have = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
    except (OSError, UnicodeDecodeError):
        return None
    wanted = [line for line in template_text(GITIGNORE[0]).splitlines() if line and not line.startswith("#")]
    missing = [line for line in wanted if line not in have]
    if not missing:
        return None
    return f"kept your {path}: add {' and '.join(missing)} to it (sqlcanary's results and caches)"


def write_init(folder: Path) -> list[Path]:
    """Write the project into `folder` (made when missing); ConfigError (exit 2) naming the first file that
    exists already, with nothing written."""
    planned = plan_init(folder)
    present = [p for p in planned if p.target.exists() or p.target.is_symlink()]
    planned = [p for p in planned if not (p.optional and p in present)]
    taken = [p.target for p in present if not p.optional]
    if taken:
        others = [str(t) for t in taken[1:]]
        listed = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        also = f" (nor {listed})" if others else ""
        raise ConfigError(
            f"already exists: init never overwrites a file{also}, and wrote nothing. "
            "Run it in a new folder, e.g. `sqlcanary init evals`",
            path=str(taken[0]),
        )
    written: list[Path] = []
    for item in planned:
        item.target.parent.mkdir(parents=True, exist_ok=True)
        with item.target.open(
            "x", encoding="utf-8", newline="\n"
        ) as fh:  # "x": never over a file made meanwhile
            fh.write(item.text)
        if item.executable:
            item.target.chmod(0o755)
        written.append(item.target)
    return written
