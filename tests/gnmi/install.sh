#!/usr/bin/env bash
# Installs the pinned packages of tests/gnmi/server.js (package.json,
# package-lock.json) into WORKDIR/node_modules, once per lock file; run the
# server with NODE_PATH=WORKDIR/node_modules.
#
#   tests/gnmi/install.sh WORKDIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../support/npm_ci.sh" "$here" "${1:?usage: install.sh WORKDIR}" \
  @grpc/grpc-js
