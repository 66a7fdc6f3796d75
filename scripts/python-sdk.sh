#!/usr/bin/env bash
# Installs the official MCP Python SDK (pinned) into a virtual environment, for the interop
# tests that run its Client and its MCPServer against the gateway. Idempotent: an environment
# that already has the pinned version is left as it is. Prints the environment's python path.
# pip uses whatever index the machine configures (pip.conf or PIP_INDEX_URL).
set -euo pipefail
VERSION="${MCP_PYTHON_SDK_VERSION:-2.3.0}"
VENV="${1:-$(dirname "$0")/../node_modules/.cache/mcp-python-sdk}"
PYTHON="$VENV/bin/python"
if [ -x "$PYTHON" ] && "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$VERSION')" 2>/dev/null; then
  echo "$PYTHON"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 is not installed" >&2; exit 2; }
python3 -m venv "$VENV" >&2
# No retries: an index the machine cannot reach (only a mirror configured beside it) fails at
# once instead of after minutes of back-off.
"$PYTHON" -m pip install --quiet --disable-pip-version-check --retries 0 --timeout 15 "mcp==$VERSION" >&2
echo "$PYTHON"
