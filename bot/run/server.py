"""The PostgreSQL a run, a check or a repair uses: `--dsn`, then DATABASE_URL, then the config's `dsn:`, else the
embedded server (or a container, `postgres: docker`). The one place that picks it, so that an address that cannot
be reached is named with where it came from."""

from __future__ import annotations

from bot.base.settings import Settings
from bot.config.model import Config, database_url
from bot.db.provision import Mode, Server, dsn_source, provision


def provision_server(
    cli_dsn: str | None, config: Config, settings: Settings, postgres: Mode | None
) -> Server:
    return provision(
        dsn=database_url(cli_dsn, config, settings.database_url),
        mode=postgres or config.postgres,
        cache_dir=settings.embedded_dir,
        source=dsn_source(cli_dsn, settings.database_url, config.dsn),
    )
