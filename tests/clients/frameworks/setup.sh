#!/usr/bin/env bash
# Create (or reuse, when the pins match) the venv the framework drivers run in.
# Last stdout line: the venv's python.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${CAIRN_FRAMEWORKS_VENV:-$HOME/.cache/cairn-frameworks-venv}"
req="$here/requirements.txt"
stamp="$venv/.cairn-requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
py="$venv/bin/python"
if [[ -x "$py" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$py" -c "import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in ('agents', 'langchain', 'langchain_openai', 'langchain_anthropic')) else 1)" 2>/dev/null; then
  echo "$py"
  exit 0
fi
base="${PYTHON:-python3}"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base" -m venv "$venv" >&2
"$py" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2
echo "$want" > "$stamp"
echo "$py"
