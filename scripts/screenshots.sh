#!/usr/bin/env bash
# Regenerate docs/screenshots/*.png with the shipped checkpoints in a real Chromium (needs
# Debian's chromium). The test suite itself never writes there.
set -euo pipefail
cd "$(dirname "$0")/.."
SEGVIZ_UPDATE_SCREENSHOTS=1 python3 -m pytest -q tests/test_browser.py::test_screenshots tests/test_browser_annotate.py "$@"
