#!/usr/bin/env bash
# Installs the pinned packages of tests/gnmi/server.js (package.json,
# package-lock.json: npm ci) into WORKDIR/node_modules, once per lock file;
# run the server with NODE_PATH=WORKDIR/node_modules. Needs node and npm
# (scripts/setup.sh) and the npm registry the first time.
#
#   tests/gnmi/install.sh WORKDIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:?usage: install.sh WORKDIR}"
mkdir -p "$work"
# One install at a time (test cases run side by side share WORKDIR).
(
  flock 9
  if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" ||
     [[ ! -d "$work/node_modules/@grpc/grpc-js" ]]; then
    cp "$here/package.json" "$here/package-lock.json" "$work/"
    (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
) 9>"$work/.install.lock"
