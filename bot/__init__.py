"""sqlcanary: keeps text-to-SQL agents honest."""

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it)
