"""Importers that turn published benchmarks into sqlcanary suites."""

from bot.cases.importers.bird_critic import import_bird_critic
from bot.cases.importers.common import ImportReport
from bot.cases.importers.defog import import_defog
from bot.cases.importers.pairs import import_pairs

__all__ = ["ImportReport", "import_bird_critic", "import_defog", "import_pairs"]
