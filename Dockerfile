# Build stage: dependencies first, in a layer of their own, so a source change rebuilds only
# the gateway itself (a dummy crate with the real Cargo.toml/Cargo.lock compiles every
# dependency; the real sources then replace it).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# The patched fred (vendor/README.md) is a dependency like the others.
COPY vendor vendor
RUN mkdir src && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src
COPY . .
# Newer than the dummy's build outputs, so cargo rebuilds the crate from the real sources.
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked \
    && strip target/release/redis-gateway

# Runtime stage: a small Debian with CA certificates (for rediss://), running as non-root.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home gateway
COPY --from=build /src/target/release/redis-gateway /usr/local/bin/redis-gateway
USER 10001
ENV GATEWAY_LISTEN=0.0.0.0:8080
EXPOSE 8080
# The binary checks itself (GET /healthz on GATEWAY_LISTEN): the slim image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/redis-gateway", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/redis-gateway"]
