"""Provisioning PostgreSQL, template databases per fixture and isolated execution of one case."""
