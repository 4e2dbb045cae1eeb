# The image of the Docker sandbox backend (agents.defaults.sandbox.docker.image):
#   make sandbox-image      # builds homarus-sandbox:bookworm-slim
# Commands run as uid 65534 with every capability dropped, a read-only root and no network
# (the gateway's `docker create` arguments); the tools below are what an assistant usually needs.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates coreutils findutils grep sed gawk \
      procps git curl jq python3 less file diffutils patch tar gzip xz-utils unzip \
 && rm -rf /var/lib/apt/lists/*
USER 65534:65534
WORKDIR /workspace
CMD ["sleep", "infinity"]
