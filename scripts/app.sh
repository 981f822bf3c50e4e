#!/usr/bin/env bash
# Set up (pip) and run the app on the shipped checkpoints: http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
exec python3 -m streamlit run app.py --server.headless true --browser.gatherUsageStats false "$@"
