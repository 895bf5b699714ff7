#!/bin/sh
# Writes the MetricsQL flavour of fabricmon's rule files, for vmalert:
#   metricsql-rules.sh SOURCE_DIR OUT_DIR
# (vmalert-fabricmon.service runs it before each start and reload, so the
# rules edited in SOURCE_DIR are the ones evaluated.)
#
# Why: MetricsQL's increase() assumes that a series whose first sample lies
# inside the window started from 0 when that value is small, so a port whose
# LinkDownedCounter already read 3 when fabricmon first exported it counts 3
# link downs "in the last hour" (on a new node, after a re-install, on every
# port at a rollout), and FabricPortLinkDowned and FabricPortFlapping page
# for links that did not move. increase_prometheus() is MetricsQL's
# increase() with Prometheus' meaning: only the change between the samples
# inside the window (docs/alerting.md, "On VictoriaMetrics").
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SOURCE_DIR OUT_DIR" >&2; exit 2; }
mkdir -p "$2"
for f in recording_rules.yml alerting_rules.yml; do
  sed -E 's/(^|[^a-z_])increase\(/\1increase_prometheus(/g' "$1/$f" > "$2/$f.tmp"
  mv "$2/$f.tmp" "$2/$f"
done
