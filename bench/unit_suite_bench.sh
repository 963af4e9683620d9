#!/usr/bin/env bash
# The unit suite (tests/unit) of a base commit and of this checkout, alternately, in one
# run on one machine: wall seconds and CPU seconds (user + sys, children included) of each.
# Under load the wall times are noise; the CPU seconds and same-run ratios are what count.
# Both runs use a cold mypy cache (-p no:cacheprovider). The checkout's runs keep compiled
# modules between runs (tests/conftest.py), as a developer's repeated runs do; the base
# compiles them each time where PYTHONDONTWRITEBYTECODE is set.
#
#   bench/unit_suite_bench.sh BASE_REF [ROUNDS] > bench/unit_suite.txt
set -euo pipefail
base_ref=${1:?usage: bench/unit_suite_bench.sh BASE_REF [ROUNDS]}
rounds=${2:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
base=$(mktemp -d /tmp/qbeast-unit-base-XXXX)
trap 'rm -rf "$base"' EXIT
git -C "$here" archive "$base_ref" | tar -x -C "$base"
for _ in $(seq "$rounds"); do
  for name in base checkout; do
    if [ "$name" = base ]; then dir=$base; else dir=$here; fi
    (cd "$dir" && /usr/bin/time -f "$name %e s wall %U user %S sys" \
      "$python" -m pytest tests/unit -q -p no:randomly -p no:cacheprovider 2>&1 | tail -2)
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
