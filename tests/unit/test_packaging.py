"""The wheel ships every package under bot/ and the report templates."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_package_under_bot_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "bot").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_templates_folder_is_packaged_as_bot_templates():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"]["bot.templates"] == "templates"
    assert "bot.templates" in config["packages"]


def test_the_distributions_version_is_the_packages() -> None:
    """pyproject.toml builds the distribution's version from bot.__version__, which `sqlcanary --version` prints
    without importlib.metadata (bot/base/version.py): the installed metadata must say the same."""
    from importlib.metadata import version

    import bot

    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert doc["project"]["dynamic"] == ["version"]
    assert doc["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bot.__version__"}
    assert version("sqlcanary") == bot.__version__
