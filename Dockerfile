# Build stage: compile the release binary.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/redis-gateway

# Runtime stage: a small Debian with CA certificates (for rediss://), running as non-root.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home gateway
COPY --from=build /src/target/release/redis-gateway /usr/local/bin/redis-gateway
USER 10001
ENV GATEWAY_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/redis-gateway"]
