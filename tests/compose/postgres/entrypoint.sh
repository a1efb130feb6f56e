#!/bin/sh
# Makes the cluster on an empty data directory (a superuser POSTGRES_USER with POSTGRES_PASSWORD
# and a database POSTGRES_DB), then runs the server in the foreground as the postgres user.
set -eu
bin=$(echo /usr/lib/postgresql/*/bin)
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password"
  chown postgres "$password"
  as_postgres "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$password" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm "$password"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE \"$POSTGRES_DB\"" |
    as_postgres "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA"
