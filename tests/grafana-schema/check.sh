#!/usr/bin/env bash
# Checks Grafana dashboards against Grafana's own dashboard schema: the
# `Dashboard` type of @grafana/schema (generated from Grafana's CUE schema),
# with the TypeScript compiler. Each dashboard becomes
#   const d: Loose<Dashboard> = <the JSON>;
# so a key the schema does not have, or a value of the wrong type (a string
# where a number goes, an unknown variable refresh mode, ...), is a compile
# error naming the file and line. Loose<> makes every field optional (the
# generated types mark fields required that Grafana fills with defaults)
# and lets an enum take its string values (JSON has no TypeScript enums).
#
#   tests/grafana-schema/check.sh WORKDIR [DASHBOARD.json ...]
#
# Installs the pinned packages (package.json, package-lock.json: npm ci)
# into WORKDIR once per lock file, then checks the given dashboards, by
# default dashboards/grafana/*.json. Needs node and npm (scripts/setup.sh)
# and the npm registry the first time. Exit status 0 = every dashboard fits.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
work="${1:?usage: check.sh WORKDIR [DASHBOARD.json ...]}"
shift
dashboards=("$@")
[[ ${#dashboards[@]} -gt 0 ]] || dashboards=("$src"/dashboards/grafana/*.json)

"$here/../support/npm_ci.sh" "$here" "$work" .bin/tsc

checks="$(mktemp -d "$work/checks.XXXXXX")"
trap 'rm -rf "$checks"' EXIT
for f in "${dashboards[@]}"; do
  name="$(basename "$f" .json | tr -c 'a-zA-Z0-9\n' '_')"
  {
    echo "// $f"
    echo "import type { Dashboard } from '@grafana/schema';"
    echo 'type Loose<T> = T extends string ? T | `${T}`'
    echo '  : T extends Array<infer U> ? Array<Loose<U>>'
    echo '  : T extends object ? { [K in keyof T]?: Loose<T[K]> } : T;'
    echo "export const dashboard: Loose<Dashboard> ="
    cat "$f"
    echo ";"
  } >"$checks/$name.ts"
done
cat >"$checks/tsconfig.json" <<JSON
{
  "compilerOptions": {
    "strict": true, "noEmit": true, "skipLibCheck": true,
    "module": "esnext", "moduleResolution": "bundler", "target": "es2020",
    "typeRoots": [], "baseUrl": ".", "paths": {"@grafana/schema": ["$work/node_modules/@grafana/schema"]}
  },
  "include": ["*.ts"]
}
JSON
# Compiler messages name checks.*/<dashboard>.ts(line,col): the dashboard's
# line is that line minus 6 (the header above).
"$work/node_modules/.bin/tsc" -p "$checks"
echo "check.sh: ${#dashboards[@]} dashboard(s) match Grafana's dashboard schema (@grafana/schema $(node -p "require('$work/node_modules/@grafana/schema/package.json').version"))"
