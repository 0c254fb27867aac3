# syntax=docker/dockerfile:1
# Cairn: multi-stage build; the runtime image holds only the binary.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p cairn \
 && install -m 0755 target/release/cairn /usr/local/bin/cairn

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/cairn --create-home cairn \
 && mkdir -p /var/lib/cairn/data \
 && chown -R cairn:cairn /var/lib/cairn
COPY --from=build /usr/local/bin/cairn /usr/local/bin/cairn
USER cairn:cairn
WORKDIR /var/lib/cairn
# Listening beyond loopback needs API keys (CAIRN_API_KEYS=key:namespace,...)
# or an explicit CAIRN_INSECURE_NO_AUTH=true.
# Memory: Cairn allocates with jemalloc, configured by .cargo/config.toml at
# build time (README "Memory"); the caches' bounds are CAIRN_*_CACHE_BYTES.
ENV CAIRN_LISTEN=0.0.0.0:8077 \
    CAIRN_DATA_DIR=/var/lib/cairn/data \
    CAIRN_LOG_FORMAT=json
VOLUME ["/var/lib/cairn/data"]
EXPOSE 8077
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8077/readyz || exit 1
ENTRYPOINT ["cairn"]
CMD ["serve"]
