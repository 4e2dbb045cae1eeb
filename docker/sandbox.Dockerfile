# The image of the Docker sandbox backend (agents.defaults.sandbox.docker.image):
#   make sandbox-image      # builds homarus-sandbox:bookworm-slim (scripts/sandbox-image.sh)
# Commands run as uid 65534 with every capability dropped, a read-only root and no network
# (the gateway's `docker create` arguments); sandbox-packages.txt lists the tools it holds.
# BASE_IMAGE: debian:bookworm-slim from a registry, or, where no registry answers, a base made
# offline from Debian's packages with those tools already in (then this build needs no network).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
COPY sandbox-packages.txt /tmp/sandbox-packages.txt
RUN set -e; missing=""; \
    for p in $(grep -v '^#' /tmp/sandbox-packages.txt); do \
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; \
    done; \
    if [ -n "$missing" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $missing && rm -rf /var/lib/apt/lists/*; \
    fi; \
    rm /tmp/sandbox-packages.txt
USER 65534:65534
WORKDIR /workspace
CMD ["sleep", "infinity"]
