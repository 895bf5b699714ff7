#!/usr/bin/env bash
# Installs the pinned npm packages of PKGDIR (its package.json and
# package-lock.json: npm ci) into WORKDIR/node_modules, once per lock file,
# and again when WORKDIR/node_modules/MARKER is missing. Tests run side by
# side share WORKDIR, so one install at a time. Needs node and npm
# (scripts/setup.sh) and the npm registry the first time.
#
#   tests/support/npm_ci.sh PKGDIR WORKDIR MARKER
set -euo pipefail
pkg="${1:?usage: npm_ci.sh PKGDIR WORKDIR MARKER}"
work="${2:?usage: npm_ci.sh PKGDIR WORKDIR MARKER}"
marker="${3:?usage: npm_ci.sh PKGDIR WORKDIR MARKER}"
mkdir -p "$work"
(
  flock 9
  if ! cmp -s "$pkg/package-lock.json" "$work/package-lock.json" ||
     [[ ! -e "$work/node_modules/$marker" ]]; then
    cp "$pkg/package.json" "$pkg/package-lock.json" "$work/"
    (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
) 9>"$work/.install.lock"
