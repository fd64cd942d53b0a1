#!/usr/bin/env bash
# The no-pgvector tests use the machine's PostgreSQL 15 at 127.0.0.1:5432.
# Start it if it is installed and stopped; the tests skip (saying why) if it is absent.
set -u
if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    exit 0
fi
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version=$(ls /etc/postgresql | head -1)
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    for _ in $(seq 1 20); do
        pg_isready -h 127.0.0.1 -p 5432 -q && exit 0
        sleep 0.5
    done
fi
echo "note: no PostgreSQL at 127.0.0.1:5432; the plain-PostgreSQL tests will be skipped" >&2
exit 0
