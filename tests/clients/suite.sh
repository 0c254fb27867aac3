#!/usr/bin/env bash
# The real-client suite: Claude Code and Codex CLI (pinned below), and the
# framework drivers in frameworks/ when they are there, against the stand-in
# provider, direct and through Cairn, in ONE loopback-only network namespace
# (no route out: the clients can reach 127.0.0.1 and nothing else).
#
#   tests/clients/suite.sh [suite.py args: --only NAME, --direct-only, --keep DIR]
#
# Env: CAIRN_BIN (default target/debug/cairn), CAIRN_CLIENTS_DIR (where the
# pinned clients are installed when missing, default ~/.cache/cairn-clients;
# when it is unset, /work/clients is used if it holds the pinned versions), SKIP_FRAMEWORKS=1.
# Exit status: non-zero when any check fails.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0

# The pinned clients: an existing install with the right versions, else npm into the cache dir.
have_pins() {
    [ -x "$1/node_modules/.bin/claude" ] && [ -x "$1/node_modules/.bin/codex" ] &&
    grep -q "\"version\": \"$CLAUDE_VERSION\"" "$1/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null &&
    grep -q "\"version\": \"$CODEX_VERSION\"" "$1/node_modules/@openai/codex/package.json" 2>/dev/null &&
    "$1/node_modules/.bin/claude" --version >/dev/null 2>&1 && "$1/node_modules/.bin/codex" --version >/dev/null 2>&1
}
clients=""
candidates=("${CAIRN_CLIENTS_DIR:-$HOME/.cache/cairn-clients}")
[ -n "${CAIRN_CLIENTS_DIR:-}" ] || candidates+=(/work/clients)   # (where NOTES.md installs them by hand)
for d in "${candidates[@]}"; do
    if have_pins "$d"; then clients=$d; break; fi
done
if [ -z "$clients" ]; then
    clients=${CAIRN_CLIENTS_DIR:-$HOME/.cache/cairn-clients}
    echo "installing Claude Code $CLAUDE_VERSION and Codex $CODEX_VERSION into $clients" >&2
    mkdir -p "$clients"
    [ -f "$clients/package.json" ] || (cd "$clients" && npm init -y >/dev/null)
    # Scripts off (npm versions differ on running them), then claude-code's postinstall by hand:
    # it links the platform package's native binary into bin/claude.exe (a stub until then).
    (cd "$clients" && npm install --no-fund --no-audit --ignore-scripts --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2 &&
        node node_modules/@anthropic-ai/claude-code/install.cjs >&2)
    have_pins "$clients" || { echo "the pinned clients did not install into $clients" >&2; exit 1; }
fi
export CLAUDE_BIN="$clients/node_modules/.bin/claude" CODEX_BIN="$clients/node_modules/.bin/codex"
echo "clients: $("$CLAUDE_BIN" --version 2>/dev/null | head -1), $("$CODEX_BIN" --version 2>/dev/null | head -1) ($clients)"

export CAIRN_BIN=${CAIRN_BIN:-$root/target/debug/cairn}
[ -x "$CAIRN_BIN" ] || [[ " $* " == *" --direct-only "* ]] || { echo "no Cairn binary at $CAIRN_BIN (build it, or pass --direct-only)" >&2; exit 1; }
[ -x "$CAIRN_BIN" ] && CAIRN_BIN=$(realpath "$CAIRN_BIN")

# The framework drivers' venv (needs the network, so before the namespace).
if [ "${SKIP_FRAMEWORKS:-0}" != 1 ] && [ -f "$here/frameworks/setup.sh" ]; then
    FRAMEWORKS_PY=$(bash "$here/frameworks/setup.sh" | tail -n 1)
    export FRAMEWORKS_PY
    echo "frameworks venv: $FRAMEWORKS_PY"
fi

# One namespace for the whole suite: root makes its own, anyone else maps to root in a user namespace.
ns=(unshare --net)
[ "$(id -u)" = 0 ] || ns=(unshare --user --map-root-user --net)
exec "${ns[@]}" -- bash -c 'ip link set lo up && exec python3 "$0" "$@"' "$here/suite.py" "$@"
