#!/usr/bin/env bash
# Run the real Claude Code CLI once, non-interactively, inside a fresh
# loopback-only network namespace (it can reach 127.0.0.1 and nothing else).
#
# Env:
#   UPSTREAM_URL  base URL Claude Code sends to (becomes ANTHROPIC_BASE_URL),
#                 default http://127.0.0.1:8765
#   SETUP         shell commands run inside the namespace before the client,
#                 e.g. start the stand-in and/or the proxy in the background
#                 (a server outside the namespace is NOT reachable from inside).
#                 Default: start tests/clients' stand-in (STANDIN) on port 8765.
#   AFTER         shell commands run inside the namespace after the client,
#                 default: save the stand-in's /_requests to $OUT.
#   OUT           default ./claude-requests.json
#   PROMPT        default "run seq 1 3000 and tell me line 1234"
#                 (the stand-in runs STANDIN_COMMAND whatever the prompt says)
#   MODEL         optional, e.g. claude-sonnet-4-6 (empty = Claude Code's default)
#   CLAUDE_BIN    default /work/clients/node_modules/.bin/claude
#   STANDIN       default upstream_clients.py beside this script
set -euo pipefail
UPSTREAM_URL=${UPSTREAM_URL:-http://127.0.0.1:8765}
CLAUDE_BIN=${CLAUDE_BIN:-/work/clients/node_modules/.bin/claude}
STANDIN=${STANDIN:-$(dirname "$(realpath "$0")")/upstream_clients.py}
OUT=$(realpath -m "${OUT:-claude-requests.json}")
PROMPT=${PROMPT:-"run seq 1 3000 and tell me line 1234"}
SETUP=${SETUP:-"python3 $STANDIN 8765 >/dev/null & sleep 1"}
AFTER=${AFTER:-"curl -s http://127.0.0.1:8765/_requests > '$OUT'"}
# A throwaway config dir: no login, no history from earlier runs.
CFG=$(mktemp -d /tmp/claude-cfg.XXXX)
# Bash output kept inline up to 128000 chars (Claude Code's default is 30000: bigger outputs
# go to a file and only a 2 KB preview is sent, so they would never reach a proxy whole).
echo '{"bashOutputMaxChars": 128000}' > "$CFG/settings.json"
WORK=$(mktemp -d /tmp/claude-work.XXXX)   # the cwd Claude Code works in
export CLAUDE_CONFIG_DIR=$CFG \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
  DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 \
  ANTHROPIC_BASE_URL=$UPSTREAM_URL ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY:-sk-ant-test}
ARGS=(-p "$PROMPT" --allowedTools Bash)   # -p: one turn, print the answer; Bash pre-approved
[ -n "${MODEL:-}" ] && ARGS+=(--model "$MODEL")
export CLAUDE_BIN SETUP AFTER WORK
# The namespace: lo up, SETUP, the client (timeout-bounded), AFTER.
unshare --net -- bash -c '
  ip link set lo up
  eval "$SETUP"
  cd "$WORK" && timeout 300 "$CLAUDE_BIN" "$@"; rc=$?
  eval "$AFTER"
  exit $rc' bash "${ARGS[@]}"
