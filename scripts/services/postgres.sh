#!/usr/bin/env bash
# A private PostgreSQL server for the store's integration tests.
#
#   eval "$(scripts/services/postgres.sh start)"   # exports AGENT_SANDBOX_TEST_PG_URL
#   scripts/services/postgres.sh url               # prints the JDBC URL
#   scripts/services/postgres.sh stop              # stops it and removes its data directory
#   scripts/services/postgres.sh halt              # stops it, keeping its data (`start` again)
#
# It runs its own cluster (initdb) in a data directory under /tmp on a fixed, non-default port,
# listening on 127.0.0.1 and a socket inside that directory: nothing else on the machine is
# touched, no systemd is needed, and a cluster that already runs on 5432 does not matter.
# Idempotent: `start` on a running server only makes sure the role and database exist.
# Installs Debian's postgresql package when no PostgreSQL binaries are found (needs root or sudo).
#
# Settings (environment): AGENT_SANDBOX_PG_PORT (default 25432: below Linux's ephemeral range,
# 32768-60999, where a busy machine's outgoing connections could hold the port at start-up),
# AGENT_SANDBOX_PG_DIR (default /tmp/agent-sandbox-pg-$PORT).
# The role and database are both `agent_sandbox_test`; its password is generated once per data
# directory. Tests create and drop one schema each, so several test runs can share the server;
# `stop` ends it for everyone, so stop only when no run needs it.
set -euo pipefail

PORT="${AGENT_SANDBOX_PG_PORT:-25432}"
DATA="${AGENT_SANDBOX_PG_DIR:-/tmp/agent-sandbox-pg-$PORT}"
LOCK="/tmp/agent-sandbox-pg-$PORT.lock"
ROLE=agent_sandbox_test
DATABASE=agent_sandbox_test
PASSWORD_FILE="$DATA/$ROLE.password"

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root to run: $* (run as root or install sudo)"; fi
}

# The newest installed server binaries, installing Debian's package when there are none.
find_bin() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    command -v apt-get >/dev/null || die "no PostgreSQL server found and no apt-get to install one (install PostgreSQL >= 13)"
    log "installing postgresql (Debian package)"
    # Update the package lists only when the install fails without it (a fresh image has none).
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; then
      as_root apt-get update -q >&2
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
    fi
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [ -n "$bin" ] && [ -x "$bin/initdb" ] || die "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
  fi
  echo "$bin"
}

# initdb and postgres refuse to run as root: as root, run the server as the `postgres` user
# that Debian's package creates.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to own the server (install the postgresql package)"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

psql_admin() {
  as_owner "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$DATA" -p "$PORT" -U postgres -d postgres "$@"
}

url() {
  [ -r "$PASSWORD_FILE" ] || die "no server set up in $DATA (run: $0 start)"
  echo "jdbc:postgresql://127.0.0.1:$PORT/$DATABASE?user=$ROLE&password=$(cat "$PASSWORD_FILE")"
}

running() {
  [ -f "$DATA/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  if [ ! -f "$DATA/PG_VERSION" ]; then
    log "creating a cluster in $DATA"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    chmod 700 "$DATA"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$DATA"; fi
    # Local socket connections (inside $DATA, reachable only by its owner and root) are trusted
    # for the set-up below; TCP connections need the role's password.
    as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --no-locale >"$DATA.initdb.log" 2>&1 || { cat "$DATA.initdb.log" >&2; die "initdb failed in $DATA"; }
    rm -f "$DATA.initdb.log"
    head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PASSWORD_FILE"
    chmod 600 "$PASSWORD_FILE"
  fi
  if ! running; then
    # 9>&- : the server must not inherit the lock's descriptor, or it would hold the lock forever.
    log "starting PostgreSQL on 127.0.0.1:$PORT"
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
      -o "-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2 9>&- \
      || { tail -n 20 "$DATA/server.log" >&2 || true; die "PostgreSQL did not start on port $PORT (is the port taken? see $DATA/server.log)"; }
  fi
  local password
  password="$(cat "$PASSWORD_FILE")"
  if [ "$(psql_admin -tA -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN PASSWORD '$password'"
  fi
  if [ "$(psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" != 1 ]; then
    psql_admin -c "CREATE DATABASE $DATABASE OWNER $ROLE"
  fi
  echo "export AGENT_SANDBOX_TEST_PG_URL='$(url)'"
}

stop() {
  if running; then
    log "stopping PostgreSQL on port $PORT"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2
  fi
  rm -rf "$DATA"
}

# Stops the server and keeps its data: `start` brings the same cluster back (the fault tests
# restart a private server of their own this way, on a port of their own).
halt() {
  if running; then
    log "halting PostgreSQL on port $PORT (data kept)"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2
  fi
}

case "${1:-}" in
  start|stop|halt|url) ;;
  *) die "usage: $0 start|stop|halt|url" ;;
esac

BIN="$(find_bin)"
exec 9>>"$LOCK"
chmod a+rw "$LOCK" 2>/dev/null || true  # so that another user's run can take the lock too
flock -w 120 9 || die "another postgres.sh holds $LOCK"
"$1"
