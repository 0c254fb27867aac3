#!/usr/bin/env bash
# A real client through Cairn to the stand-in, in a loopback-only namespace:
#   CAIRN=target/release/cairn tests/clients/through_cairn/run.sh NAME claude|codex [TAP=1|0]
# (env MODEL, PROVIDER passed to run_claude.sh / run_codex.sh). With TAP=1 a
# recording pass-through on :8078 keeps the exact bytes the client sent.
# Results in ${RUNS:-/tmp/cairn-clients}/NAME; see ../THROUGH_CAIRN.md.
NAME=$1; CLIENT=$2; USE_TAP=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
CAIRN=$(realpath "${CAIRN:?set CAIRN to a cairn binary}")
D=${RUNS:-/tmp/cairn-clients}/$NAME; rm -rf $D; mkdir -p $D
# STANDIN_COMMAND: what the scripted model runs (default: 3000 lines with one planted line)
PORT=8077; [ "$USE_TAP" = 1 ] && PORT=8078
export OUT=$D/upstream.json
export SETUP="python3 $HERE/../upstream_clients.py 8765 >$D/standin.log 2>&1 &
 $CAIRN serve --listen 127.0.0.1:8077 --data-dir \$(mktemp -d) --upstream-anthropic-url http://127.0.0.1:8765 --upstream-openai-url http://127.0.0.1:8765/v1 >$D/cairn.stdout 2>$D/cairn.stderr &
 python3 $HERE/tap.py 8078 8077 >$D/tap.log 2>&1 &
 sleep 2"
export AFTER="curl -s http://127.0.0.1:8765/_requests > $D/upstream.json; curl -s http://127.0.0.1:8078/_tap > $D/client.json"
export UPSTREAM_URL=http://127.0.0.1:$PORT
cd $D
$HERE/../run_$CLIENT.sh >$D/client.stdout 2>$D/client.stderr; echo "rc=$?" > $D/rc
cat $D/rc
