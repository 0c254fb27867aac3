#!/usr/bin/env bash
# Run the real Codex CLI (`codex exec`) once inside a fresh loopback-only
# network namespace (it can reach 127.0.0.1 and nothing else).
#
# Env:
#   UPSTREAM_URL  base URL of an OpenAI-compatible server WITHOUT /v1,
#                 default http://127.0.0.1:8765 (Codex posts to $UPSTREAM_URL/v1/responses)
#   PROVIDER      "custom" (default): a [model_providers.standin] entry, HTTP+SSE;
#                 "openai": the built-in openai provider with openai_base_url
#                 (this one tries a WebSocket first, then falls back to HTTP+SSE)
#   SETUP         shell commands run inside the namespace before the client,
#                 e.g. start the stand-in and/or the proxy in the background
#                 (a server outside the namespace is NOT reachable from inside).
#                 Default: start the stand-in (STANDIN) on port 8765.
#   AFTER         shell commands run inside the namespace after the client,
#                 default: save the stand-in's /_requests to $OUT.
#   OUT           default ./codex-requests.json
#   PROMPT        default "run seq 1 3000 and tell me line 1234"
#   MODEL         optional, e.g. gpt-5.5 (empty = Codex's default)
#   CODEX_BIN     default /work/clients/node_modules/.bin/codex
#   STANDIN       default upstream_clients.py beside this script
set -euo pipefail
UPSTREAM_URL=${UPSTREAM_URL:-http://127.0.0.1:8765}
CODEX_BIN=${CODEX_BIN:-/work/clients/node_modules/.bin/codex}
STANDIN=${STANDIN:-$(dirname "$(realpath "$0")")/upstream_clients.py}
OUT=$(realpath -m "${OUT:-codex-requests.json}")
PROMPT=${PROMPT:-"run seq 1 3000 and tell me line 1234"}
SETUP=${SETUP:-"python3 $STANDIN 8765 >/dev/null & sleep 1"}
AFTER=${AFTER:-"curl -s http://127.0.0.1:8765/_requests > '$OUT'"}
# A throwaway CODEX_HOME (no auth.json, no history) and work dir.
export CODEX_HOME=$(mktemp -d -p "${RUN_TMP:-/var/tmp}" codex-home.XXXX) OPENAI_API_KEY=${OPENAI_API_KEY:-sk-test}
WORK=$(mktemp -d -p "${RUN_TMP:-/var/tmp}" codex-work.XXXX)
ARGS=(exec --skip-git-repo-check --color never
  -c approval_policy=\"never\" -c sandbox_mode=\"danger-full-access\"   # run the tool unasked, no sandbox
  -c check_for_update_on_startup=false -c otel.exporter=\"none\"        # no update check, no OTLP
  -c analytics.enabled=false -c feedback.enabled=false                  # no analytics / feedback upload
  -c tool_output_token_limit=200000)                                    # keep big outputs whole in the history
if [ "${PROVIDER:-custom}" = custom ]; then
  ARGS+=(-c model_provider=\"standin\"
    -c "model_providers.standin={name=\"standin\",base_url=\"$UPSTREAM_URL/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}")
else
  ARGS+=(-c "openai_base_url=\"$UPSTREAM_URL/v1\"")
fi
[ -n "${MODEL:-}" ] && ARGS+=(-m "$MODEL")
ARGS+=("$PROMPT")
export CODEX_BIN SETUP AFTER WORK
unshare --net -- bash -c '
  ip link set lo up
  eval "$SETUP"
  cd "$WORK" && timeout 300 "$CODEX_BIN" "$@" </dev/null; rc=$?
  eval "$AFTER"
  exit $rc' bash "${ARGS[@]}"
