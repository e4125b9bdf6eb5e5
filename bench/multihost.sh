#!/usr/bin/env bash
# The multi-host benchmarks on hosts made of network namespaces (needs root):
# bench/multihost.py, with the Python environments it needs — tests/.venv
# (redis-py, for loading keys from the client host) and bench/.venv
# (matplotlib, for the plot). Arguments go to bench/multihost.py (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/cluster.sh
. bench/cluster.sh
bench_venv
if [ ! -x tests/.venv/bin/python ]; then
  python3 -m venv tests/.venv
  tests/.venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
fi
exec tests/.venv/bin/python bench/multihost.py "$@"
