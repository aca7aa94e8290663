#!/usr/bin/env bash
# Makes sure what the test suite needs is on this machine and running:
# PostgreSQL 15 with the vector (pgvector) and pg_trgm extensions, and Redis.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail

PG_VERSION="${PG_VERSION:-15}"
PG_CONFIG="/usr/lib/postgresql/${PG_VERSION}/bin/pg_config"
EXT_DIR="/usr/share/postgresql/${PG_VERSION}/extension"

log() { echo "[prepare] $*"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

build_pgvector() {
  log "building pgvector from Debian's source package"
  local src=/etc/apt/sources.list.d/hearken-trixie-src.sources
  if [ ! -f "$src" ]; then
    as_root tee "$src" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-server-dev-${PG_VERSION}" make gcc dpkg-dev >/dev/null
  local work
  work=$(mktemp -d)
  (
    cd "$work"
    apt-get source --download-only pgvector >/dev/null
    tar xf pgvector_*.orig.tar.*
    cd pgvector-*/
    make -s PG_CONFIG="$PG_CONFIG" >/dev/null
    as_root make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
  )
  rm -rf "$work"
}

if [ ! -f "$EXT_DIR/vector.control" ]; then build_pgvector; else log "pgvector present"; fi
[ -f "$EXT_DIR/pg_trgm.control" ] || { log "pg_trgm missing: installing postgresql-contrib"; as_root apt-get install -y -qq "postgresql-contrib-${PG_VERSION}" >/dev/null || true; }

# The /docs test renders the reference in a real browser, offline.
if ! command -v chromium >/dev/null 2>&1; then
  log "installing Debian's chromium (for the /docs test)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# Chinese and Japanese glyphs for the widget's screenshots (1.6 MB); without them they show as boxes.
if [ ! -d /usr/share/fonts/truetype/wqy ]; then
  log "installing fonts-wqy-microhei (CJK glyphs for the widget's screenshots)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null \
    || { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null; } \
    || log "fonts-wqy-microhei not installed: CJK text in screenshots shows as boxes"
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  log "starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping

# --- Redis Sentinel and Cluster (issue 30; test/redis-topologies.test.ts) ---
# On loopback, without persistence, under $REDIS_TOPOLOGY_DIR (the tests restart nodes from the
# configuration files written there): a Sentinel group "hearken" (a master and a replica, 6390 and
# 6391, and three sentinels, 26380-26382, that fail over within a few seconds), and a Cluster of
# three masters, 7000-7002, without replicas. What answers is left alone: after a failover the
# master may be 6391, and a node started again joins whichever is the master now.
REDIS_TOPOLOGY_DIR="${REDIS_TOPOLOGY_DIR:-/tmp/hearken-redis}"
SENTINEL_NAME=hearken

redis_up() { redis-cli -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1; }
wait_redis() { for _ in $(seq 1 50); do redis_up "$1" && return 0; sleep 0.1; done; log "port $1 does not answer"; return 1; }

# A data node's configuration: loopback, no persistence, its own directory.
redis_node_conf() {
  local port=$1 dir="$REDIS_TOPOLOGY_DIR/$1"
  mkdir -p "$dir"
  if [ ! -f "$dir/redis.conf" ]; then
    cat >"$dir/redis.conf" <<CONF
port $port
bind 127.0.0.1
dir $dir
logfile $dir/redis.log
pidfile $dir/redis.pid
daemonize yes
save ""
appendonly no
CONF
    if [ "${2:-}" = cluster ]; then
      printf 'cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\n' >>"$dir/redis.conf"
    fi
  fi
  echo "$dir/redis.conf"
}

# The group's master now: what a sentinel says, else the data node that says it is one, else 6390.
sentinel_master_port() {
  local port answer
  for port in 26380 26381 26382; do
    answer=$(redis-cli -p "$port" SENTINEL get-master-addr-by-name "$SENTINEL_NAME" 2>/dev/null | sed -n 2p)
    [ -n "$answer" ] && { echo "$answer"; return; }
  done
  for port in 6390 6391; do
    [ "$(redis-cli -p "$port" ROLE 2>/dev/null | head -1)" = master ] && { echo "$port"; return; }
  done
  echo 6390
}

master=$(sentinel_master_port)
for port in 6390 6391; do
  redis_up "$port" && continue
  log "starting Redis $port (Sentinel group, master: $master)"
  if [ "$port" = "$master" ]; then redis-server "$(redis_node_conf "$port")"
  else redis-server "$(redis_node_conf "$port")" --replicaof 127.0.0.1 "$master"; fi
  wait_redis "$port"
done
for port in 26380 26381 26382; do
  redis_up "$port" && continue
  log "starting Redis Sentinel $port"
  dir="$REDIS_TOPOLOGY_DIR/$port"
  mkdir -p "$dir"
  # Sentinel rewrites its file with what it learns; a fresh one watches the master of now.
  cat >"$dir/sentinel.conf" <<CONF
port $port
bind 127.0.0.1
dir $dir
logfile $dir/sentinel.log
daemonize yes
sentinel monitor $SENTINEL_NAME 127.0.0.1 $master 2
sentinel down-after-milliseconds $SENTINEL_NAME 1000
sentinel failover-timeout $SENTINEL_NAME 5000
sentinel parallel-syncs $SENTINEL_NAME 1
CONF
  redis-server "$dir/sentinel.conf" --sentinel
  wait_redis "$port"
done

for port in 7000 7001 7002; do
  redis_up "$port" && continue
  log "starting Redis Cluster node $port"
  redis-server "$(redis_node_conf "$port" cluster)"
  wait_redis "$port"
done
# Slots are assigned once, on three nodes that know nothing yet; a node started again keeps its nodes.conf.
if [ "$(redis-cli -p 7000 CLUSTER INFO | tr -d '\r' | sed -n 's/^cluster_slots_assigned://p')" = 0 ]; then
  log "creating the Redis Cluster"
  redis-cli --cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 --cluster-replicas 0 --cluster-yes >/dev/null
fi
# Every node says ok (a node started again refuses for a moment after it rejoins).
cluster_ok() { for port in 7000 7001 7002; do redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok' || return 1; done; }
for _ in $(seq 1 100); do cluster_ok && break; sleep 0.1; done
cluster_ok || { log "the Redis Cluster is not ok"; redis-cli -p 7000 CLUSTER INFO | grep '^cluster_state:'; exit 1; }
log "Redis Sentinel group ($SENTINEL_NAME, master 127.0.0.1:$(sentinel_master_port)) and Redis Cluster (7000-7002) are ready"
# --- end of Redis Sentinel and Cluster ---

# Prove that both extensions can actually be created on this server.
psql -q -h 127.0.0.1 -U postgres -d postgres -v ON_ERROR_STOP=1 -c "
  DROP DATABASE IF EXISTS hearken_prepare_check;" -c "CREATE DATABASE hearken_prepare_check;"
psql -q -h 127.0.0.1 -U postgres -d hearken_prepare_check -v ON_ERROR_STOP=1 \
  -c "CREATE EXTENSION IF NOT EXISTS vector; CREATE EXTENSION IF NOT EXISTS pg_trgm;"
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE hearken_prepare_check;"
log "PostgreSQL (vector, pg_trgm) and Redis are ready"

# --- PgBouncer in transaction mode (issue 30; docs/operations.md: "Behind PgBouncer") -------------
# Debian's package, on loopback 6432, in front of the PostgreSQL above: every database (the tests
# create theirs on the fly) as user postgres, trusted as PostgreSQL trusts it. Only extra_float_digits
# (which drivers send) is ignored among startup parameters: statement_timeout is still refused, as
# managed poolers refuse it. Its own config and files, not Debian's service (stopped and disabled if it runs).
PGBOUNCER_PORT="${PGBOUNCER_PORT:-6432}"
PGBOUNCER_CONF=/etc/pgbouncer-hearken
PGBOUNCER_RUN=/tmp/hearken-pgbouncer
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  log "installing Debian's pgbouncer"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null \
    || { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; }
fi
# Ours runs when its pidfile names a live process. Something else answering on the port is not
# enough: where systemd runs, installing Debian's package starts Debian's own service on
# 127.0.0.1:6432 (md5 authentication, no databases), which would pass pg_isready and refuse us.
pgbouncer_ours() { [ -f "$PGBOUNCER_RUN/pgbouncer.pid" ] && [ -d "/proc/$(cat "$PGBOUNCER_RUN/pgbouncer.pid")" ]; }
if ! pgbouncer_ours; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now pgbouncer.service >/dev/null 2>&1 || true
  fi
  as_root pkill -f '^/usr/sbin/pgbouncer .*/etc/pgbouncer/pgbouncer.ini$' >/dev/null 2>&1 || true
  for _ in $(seq 1 20); do pg_isready -q -h 127.0.0.1 -p "$PGBOUNCER_PORT" || break; sleep 0.25; done
  if pg_isready -q -h 127.0.0.1 -p "$PGBOUNCER_PORT"; then
    echo "prepare-services: something else listens on 127.0.0.1:$PGBOUNCER_PORT; set PGBOUNCER_PORT to a free port" >&2
    exit 1
  fi
  log "starting PgBouncer (transaction mode) on 127.0.0.1:$PGBOUNCER_PORT"
  # pgbouncer refuses to run as root: as postgres then, else as whoever runs this.
  if [ "$(id -u)" = 0 ]; then pgb_user=postgres; else pgb_user=$(id -un); fi
  as_root mkdir -p "$PGBOUNCER_CONF" "$PGBOUNCER_RUN"
  as_root chown "$pgb_user" "$PGBOUNCER_RUN"
  as_root tee "$PGBOUNCER_CONF/userlist.txt" >/dev/null <<'USERS'
"postgres" ""
USERS
  as_root tee "$PGBOUNCER_CONF/pgbouncer.ini" >/dev/null <<INI
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGBOUNCER_CONF/userlist.txt
admin_users = postgres
pool_mode = transaction
ignore_startup_parameters = extra_float_digits
max_client_conn = 2000
default_pool_size = 20
; PostgreSQL allows 100 connections; the rest of the suite needs most of them.
max_user_connections = 40
; Test databases come and go: idle server connections to them are not kept.
server_idle_timeout = 10
logfile = $PGBOUNCER_RUN/pgbouncer.log
pidfile = $PGBOUNCER_RUN/pgbouncer.pid
INI
  as_root chmod 644 "$PGBOUNCER_CONF/pgbouncer.ini" "$PGBOUNCER_CONF/userlist.txt"
  if [ "$(id -u)" = 0 ]; then
    su "$pgb_user" -s /bin/sh -c "/usr/sbin/pgbouncer -d $PGBOUNCER_CONF/pgbouncer.ini"
  else
    /usr/sbin/pgbouncer -d "$PGBOUNCER_CONF/pgbouncer.ini"
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PGBOUNCER_PORT" && break; sleep 0.5; done
fi
psql -qAt -h 127.0.0.1 -p "$PGBOUNCER_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "SELECT 1" >/dev/null
log "PgBouncer (transaction mode) is ready on 127.0.0.1:$PGBOUNCER_PORT"
# --- end PgBouncer ------------------------------------------------------------------------------

# --- A PostgreSQL replication pair (issue 30; docs/operations.md: "A read replica") ----------------
# A primary of its own on 127.0.0.1:5434 and its streaming standby on 127.0.0.1:5435, made with
# `pg_basebackup -R`, for test/read-replica.test.ts, which stops and starts both: the server on 5432
# that every other test uses is never touched. Trust on loopback, TCP only, little memory, no fsync
# (test data), under $REPLICATION_DIR/{primary,replica}, run as postgres (as whoever runs this when
# not root). The extensions (vector, pg_trgm) are installed for PostgreSQL 15 as a whole.
REPLICATION_DIR="${HEARKEN_REPLICATION_DIR:-/var/lib/hearken-replication}"
REPLICATION_PRIMARY_PORT="${HEARKEN_REPLICATION_PRIMARY_PORT:-5434}"
REPLICATION_REPLICA_PORT="${HEARKEN_REPLICATION_REPLICA_PORT:-5435}"
PG_BIN="/usr/lib/postgresql/${PG_VERSION}/bin"
if [ "$(id -u)" = 0 ]; then pg_user=postgres; else pg_user=$(id -un); fi
as_pg() { if [ "$(id -u)" = 0 ]; then su "$pg_user" -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
pg_up() { pg_isready -q -h 127.0.0.1 -p "$1" -U postgres; }
wait_pg() { for _ in $(seq 1 100); do pg_up "$1" && return 0; sleep 0.1; done; log "PostgreSQL on port $1 does not answer"; return 1; }

as_root mkdir -p "$REPLICATION_DIR"
as_root chown "$pg_user" "$REPLICATION_DIR"
if [ ! -f "$REPLICATION_DIR/primary/PG_VERSION" ]; then
  log "creating the replication primary in $REPLICATION_DIR/primary"
  as_pg "rm -rf '$REPLICATION_DIR/primary' && '$PG_BIN/initdb' -D '$REPLICATION_DIR/primary' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null"
  # initdb --auth=trust also trusts replication connections from 127.0.0.1.
  as_pg "cat >>'$REPLICATION_DIR/primary/postgresql.conf'" <<CONF
# hearken: the replication pair's primary (scripts/prepare-services.sh)
listen_addresses = '127.0.0.1'
port = $REPLICATION_PRIMARY_PORT
unix_socket_directories = ''
max_connections = 40
shared_buffers = 32MB
max_wal_size = 128MB
min_wal_size = 32MB
wal_keep_size = 64MB
max_wal_senders = 4
fsync = off
full_page_writes = off
CONF
fi
if ! pg_up "$REPLICATION_PRIMARY_PORT"; then
  log "starting the replication primary on 127.0.0.1:$REPLICATION_PRIMARY_PORT"
  as_pg "'$PG_BIN/pg_ctl' -D '$REPLICATION_DIR/primary' -l '$REPLICATION_DIR/primary.log' -w -s start"
  wait_pg "$REPLICATION_PRIMARY_PORT"
fi
if [ ! -f "$REPLICATION_DIR/replica/standby.signal" ]; then
  log "making the streaming replica with pg_basebackup -R"
  # Into a directory of its own first: an interrupted copy never looks like a replica.
  as_pg "rm -rf '$REPLICATION_DIR/replica' '$REPLICATION_DIR/replica.partial' && '$PG_BIN/pg_basebackup' -h 127.0.0.1 -p $REPLICATION_PRIMARY_PORT -U postgres -D '$REPLICATION_DIR/replica.partial' -R -X stream -c fast --no-sync"
  as_pg "echo 'port = $REPLICATION_REPLICA_PORT' >>'$REPLICATION_DIR/replica.partial/postgresql.conf' && mv '$REPLICATION_DIR/replica.partial' '$REPLICATION_DIR/replica'"
fi
if ! pg_up "$REPLICATION_REPLICA_PORT"; then
  log "starting the streaming replica on 127.0.0.1:$REPLICATION_REPLICA_PORT"
  as_pg "'$PG_BIN/pg_ctl' -D '$REPLICATION_DIR/replica' -l '$REPLICATION_DIR/replica.log' -w -s start"
  wait_pg "$REPLICATION_REPLICA_PORT"
fi
# The replica replays (a test may have paused it and stopped before resuming).
[ "$(psql -qAt -h 127.0.0.1 -p "$REPLICATION_REPLICA_PORT" -U postgres -d postgres -c 'SELECT pg_is_in_recovery()')" = t ] \
  || { log "127.0.0.1:$REPLICATION_REPLICA_PORT is not a standby"; exit 1; }
psql -qAt -h 127.0.0.1 -p "$REPLICATION_REPLICA_PORT" -U postgres -d postgres -c 'SELECT pg_wal_replay_resume()' >/dev/null
log "PostgreSQL replication pair is ready: primary 127.0.0.1:$REPLICATION_PRIMARY_PORT, streaming replica 127.0.0.1:$REPLICATION_REPLICA_PORT"
# --- end replication pair ---------------------------------------------------------------------------
