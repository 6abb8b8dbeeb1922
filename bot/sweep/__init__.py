"""Sweeps: a grid of settings planned into a GitHub Actions matrix or run on this machine (`sweep run`), and the
legs' runs merged into one table."""
