#!/usr/bin/env bash
# Slice latency of the release server on each cache and object-store setup:
# files with and without the in-process frame cache, files + Redis, S3 with
# no cache, S3 + Redis, S3 with the frame cache. Each setup runs
# `cairn-bench --only slices` on a fresh server and data directory; the
# table on stdout gives p50/p90/p99 of 100-line slices at random places.
#
#   bench/slice-backends.sh [extra cairn-bench options]
#
# Needs an S3 endpoint that takes any credentials (BENCH_S3_ENDPOINT, default
# http://127.0.0.1:5000: `python3 -m moto.server -H 127.0.0.1 -p 5000`) and
# Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379; its keys under the
# `cairn-bench-*` prefixes are left to expire).
set -euo pipefail
cd "$(dirname "$0")/.."

endpoint="${BENCH_S3_ENDPOINT:-http://127.0.0.1:5000}"
redis="${BENCH_REDIS_URL:-redis://127.0.0.1:6379}"
out="${BENCH_OUT:-${TMPDIR:-/tmp}/cairn-slice-backends}"
mkdir -p "$out"

cargo build --release -q -p cairn -p cairn-bench
bench=target/release/cairn-bench

curl -sf -o /dev/null "$endpoint" || { echo "no S3 endpoint answers at $endpoint" >&2; exit 1; }
redis-cli -u "$redis" ping >/dev/null || { echo "no Redis answers at $redis" >&2; exit 1; }

# A fresh bucket on the endpoint, as a CAIRN_BLOB_URL.
bucket_url() {
    local bucket="cairn-bench-$1-$(date +%s%N)"
    curl -sf -X PUT "$endpoint/$bucket" >/dev/null
    echo "s3://$bucket/cairn?endpoint=$endpoint&allow_http=true&region=us-east-1&access_key_id=bench&secret_access_key=bench"
}

no_frames=CAIRN_FRAME_CACHE_BYTES=0
run=$(date +%s)
setups=(
    "files, frame cache (default)|"
    "files, no cache|$no_frames"
    "files + Redis|$no_frames CAIRN_REDIS_URL=$redis CAIRN_REDIS_PREFIX=cairn-bench-$run-a"
    "S3, no cache|$no_frames CAIRN_BLOB_URL=@s3"
    "S3 + Redis|$no_frames CAIRN_REDIS_URL=$redis CAIRN_REDIS_PREFIX=cairn-bench-$run-b CAIRN_BLOB_URL=@s3"
    "S3, frame cache (default)|CAIRN_BLOB_URL=@s3"
)

echo "| setup | p50 | p90 | p99 | HTTP floor p50 / p99 |"
echo "| --- | --- | --- | --- | --- |"
n=0
for setup in "${setups[@]}"; do
    n=$((n + 1))
    name="${setup%%|*}"
    vars=()
    for var in ${setup#*|}; do
        [[ "$var" == *=@s3 ]] && var="${var%@s3}$(bucket_url "$n")"
        vars+=("$var")
    done
    report="$out/setup-$n.md"
    if ! env "${vars[@]}" "$bench" --only slices --ingest-mib 100 --slices 2000 \
        --report "$report" "$@" >"$out/setup-$n.log" 2>&1; then
        echo "$name: the bench failed, see $out/setup-$n.log" >&2
        exit 1
    fi
    cell() { grep -F "slice of the" "$report" | grep -F "$1" | head -1 | cut -d'|' -f3 | xargs; }
    floor=$(grep -F 'HTTP floor' "$report" | cut -d'|' -f3 | xargs)
    echo "| $name | $(cell p50) | $(cell p90) | $(cell p99) | $floor |"
done
echo
echo "reports and logs: $out"
