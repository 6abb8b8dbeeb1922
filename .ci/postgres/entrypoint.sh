#!/usr/bin/env bash
# The entrypoint of .ci/postgres/Dockerfile: what the official postgres image's docker-entrypoint.sh does for a
# service container, in short. On the first start (an empty PGDATA) it runs initdb with POSTGRES_USER as the
# superuser and POSTGRES_PASSWORD as its password, lets every address connect with a password (scram-sha-256;
# `trust` with POSTGRES_HOST_AUTH_METHOD=trust), creates POSTGRES_DB and runs /docker-entrypoint-initdb.d/*.sql
# and *.sh; then it runs `postgres` as the postgres user, listening on every address.
set -euo pipefail

: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

if [ "${1:-}" = "postgres" ] || [ "${1:0:1}" = "-" ]; then
  [ "${1:-}" = "postgres" ] && shift
  if [ "$(id -u)" = "0" ]; then
    mkdir -p "$PGDATA"
    chown postgres:postgres "$PGDATA"
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
  fi
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != "trust" ]; then
      cat >&2 <<'MSG'
Error: the database is uninitialized and the superuser password is not specified.
       Set POSTGRES_PASSWORD (e.g. `env: {POSTGRES_PASSWORD: ...}` on the service), or
       POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without a password.
MSG
      exit 1
    fi
    pwfile=$(mktemp)
    printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
    # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is a list of flags, as in the official image
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host="$POSTGRES_HOST_AUTH_METHOD" \
      --encoding=UTF8 ${POSTGRES_INITDB_ARGS:-} >/dev/null
    rm -f "$pwfile"
    printf 'host all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"
    printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.auto.conf"
    # A server on the socket only, for the database and the init scripts.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql=(psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname postgres)
    if [ "$POSTGRES_DB" != "postgres" ]; then
      "${psql[@]}" --set db="$POSTGRES_DB" -q <<<'CREATE DATABASE :"db";'
    fi
    for f in /docker-entrypoint-initdb.d/*; do
      case "$f" in
        *.sh) echo "running $f"; . "$f" ;;
        *.sql) echo "running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -q -f "$f" ;;
        *) ;;
      esac
    done
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo "PostgreSQL init process complete; ready for start up."
  fi
  exec postgres "$@"
fi
exec "$@"
