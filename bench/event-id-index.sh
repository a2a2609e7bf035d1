#!/usr/bin/env bash
# The event-id index alone (docs/scaling.md, point 3): inserts of 32 new random ids per transaction into a
# table whose id is unique through a B-tree primary key, and into one whose id is unique through a hash index
# (an exclusion constraint, as postroom's inbox keeps it: migrations/012), at ROWS ids already present (10M by default)
# and at 100k. Each pair alternates (B-tree, hash, B-tree, hash) for SECONDS each, with pgbench and 2 clients;
# prints transactions per second and the WAL each run wrote. Bounded: one scratch database, dropped at the end.
# Needs Postgres (DATABASE_URL as an admin URL, default postgres://postgres@127.0.0.1:5432/postgres) and pgbench.
# DB_OPTS are added to CREATE DATABASE, e.g. DB_OPTS="locale_provider icu icu_locale 'en-US' template template0"
# for a collation closer to a typical production default than this machine's C.UTF-8.
set -euo pipefail
ADMIN_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
ROWS="${ROWS:-10000000}"
SMALL="${SMALL:-100000}"
SECONDS_EACH="${SECONDS_EACH:-15}"
DB="postroom_bench_idx_$$"
URL="${ADMIN_URL%/*}/$DB"
psql "$ADMIN_URL" -qc "CREATE DATABASE $DB ${DB_OPTS:-}"
trap 'psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"' EXIT

psql "$URL" -q <<SQL
CREATE TABLE bt (event_id text PRIMARY KEY, body bytea);
CREATE TABLE hs (event_id text NOT NULL, body bytea, EXCLUDE USING hash (event_id WITH =));
CREATE TABLE bt_small (event_id text PRIMARY KEY, body bytea);
CREATE TABLE hs_small (event_id text NOT NULL, body bytea, EXCLUDE USING hash (event_id WITH =));
INSERT INTO bt SELECT 'evt_' || gen_random_uuid(), NULL FROM generate_series(1, $ROWS);
INSERT INTO hs SELECT event_id, NULL FROM bt;
INSERT INTO bt_small SELECT 'evt_' || gen_random_uuid(), NULL FROM generate_series(1, $SMALL);
INSERT INTO hs_small SELECT event_id, NULL FROM bt_small;
VACUUM ANALYZE;
CHECKPOINT;
SQL
psql "$URL" -At -c "SELECT 'index sizes at $ROWS ids: B-tree ' || pg_size_pretty(pg_relation_size('bt_pkey')) || ', hash ' || pg_size_pretty(pg_relation_size('hs_event_id_excl'))"

script=$(mktemp)
trap 'rm -f "$script"; psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"' EXIT
for table in bt hs bt hs bt_small hs_small bt_small hs_small; do
  conflict='ON CONFLICT DO NOTHING'
  case "$table" in bt*) conflict='ON CONFLICT (event_id) DO NOTHING' ;; esac
  echo "INSERT INTO $table SELECT 'evt_' || gen_random_uuid(), convert_to(repeat('x', 250), 'UTF8') FROM generate_series(1, 32) $conflict;" >"$script"
  before=$(psql "$URL" -Atc "SELECT pg_current_wal_lsn()")
  tps=$(pgbench "$URL" -n -c 2 -T "$SECONDS_EACH" -f "$script" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  wal=$(psql "$URL" -Atc "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), '$before'))")
  printf '%-9s %10s tx/s  %s of WAL\n' "$table" "$tps" "$wal"
done
