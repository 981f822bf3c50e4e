#!/usr/bin/env bash
# Set up (pip) and run the default test suite. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements-dev.txt
python3 -m pytest -m "not slow" "$@"
