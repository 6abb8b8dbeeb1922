"""Importers that turn published benchmarks into sqlcanary suites."""

from bot.cases.importers.bird_critic import import_bird_critic
from bot.cases.importers.common import ImportReport
from bot.cases.importers.defog import import_defog

__all__ = ["ImportReport", "import_bird_critic", "import_defog"]
