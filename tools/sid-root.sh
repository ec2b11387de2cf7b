#!/usr/bin/env bash
# The Debian sid (unstable) root for amd64 (tools/debian-root.sh, in the cache as sid-amd64-<n>;
# about 35 s once). It brings what Debian 12 (this machine's release) does not have: CPython 3.14
# and 3.15, on which `make dist-check` runs the whole Python suite (tests/dist/check-sid.sh, in a
# chroot), and Redis 8.0 built with TLS, which `make servers` runs from here with the root's own
# loader (tools/servers.sh, `redis-8.0.6`). Sid moves: what it had on the day the root was made
# stays in the root, and the users check the versions they need rather than trust its name.
#
# usage: tools/sid-root.sh   (prints the root's path; makes it first when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
# The number changes with the package list, so an older root is not reused.
exec bash tools/debian-root.sh sid-amd64-1 amd64 sid \
  python3.14,python3.14-venv,python3.15,python3.15-venv,redis-server,ca-certificates
