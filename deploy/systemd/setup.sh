#!/bin/sh
# Sets up two ctxkit serve replicas, PostgreSQL and HAProxy on one Debian host.
# Read it before running it (as root). Replicas on other hosts: run the
# ctxkit part there and point CTXKIT_STORE at the database host.
set -eu
apt-get install -y postgresql haproxy
useradd --system --home /var/lib/ctxkit ctxkit 2>/dev/null || true
# A database role with the same name as the system user: peer
# authentication over the Unix socket, no password to keep.
runuser -u postgres -- psql -v ON_ERROR_STOP=1 -c "CREATE ROLE ctxkit LOGIN" || true
runuser -u postgres -- createdb -O ctxkit ctxkit || true
install -d -m 0750 -o ctxkit -g ctxkit /etc/ctxkit
install -m 0600 -o ctxkit -g ctxkit serve.env /etc/ctxkit/serve.env
install -m 0755 ../../ctxkit /usr/local/bin/ctxkit   # go build -o ctxkit ./cmd/ctxkit first
install -m 0644 ctxkit-serve@.service /etc/systemd/system/
install -m 0644 haproxy.cfg /etc/haproxy/haproxy.cfg
systemctl daemon-reload
systemctl enable --now ctxkit-serve@8791 ctxkit-serve@8792
systemctl reload haproxy
curl -sS http://127.0.0.1:8788/healthz
