#!/usr/bin/env bash
# The console's browser tests' tools, installed when missing or at another
# version (idempotent; .ci/run calls it): Debian's chromium and
# chromium-driver, selenium (PyPI) and axe-core (npm, into
# tests/console/node_modules), each pinned. Prints the versions.
set -euo pipefail
cd "$(dirname "$0")"

SELENIUM=4.51.0  # 4.52.0 needs a certifi newer than the registry has
AXE_CORE=4.14.1  # the pin in package.json and package-lock.json

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver
fi
/usr/bin/chromium --version 2>/dev/null  # its launcher warns about /dev/shm on stderr
/usr/bin/chromedriver --version

if ! python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('selenium') != '$SELENIUM')" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check "selenium==$SELENIUM"
fi
python3 -c 'import selenium; print("selenium", selenium.__version__)'

axe_version() { node -p 'require("./node_modules/axe-core/package.json").version' 2>/dev/null || true; }
if [ "$(axe_version)" != "$AXE_CORE" ]; then
    npm ci --no-audit --no-fund --silent
fi
echo "axe-core $(axe_version)"
