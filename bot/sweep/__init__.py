"""Sweeps: a grid of settings planned into a GitHub Actions matrix, and the shards' runs merged into one table."""
