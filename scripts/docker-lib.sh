# Shared by scripts/sandbox-image.sh and scripts/gateway-image.sh (sourced; `who` names the caller
# in messages). Images are built where no image registry answers: a registry base when the engine
# has it or can pull it, else a base made offline from Debian's packages, made once and reused.

need_engine() {
  docker info >/dev/null 2>&1 && return 0
  echo "$who: no Docker engine answers (start dockerd, or check DOCKER_HOST)" >&2
  exit 1
}

# pick_base REGISTRY_BASE OFFLINE_TAG [docker-offline-base.sh option]: prints the base to build FROM
pick_base() {
  if docker image inspect "$1" >/dev/null 2>&1 || timeout 120 docker pull -q "$1" >/dev/null 2>&1; then
    echo "$1"
    return 0
  fi
  if ! docker image inspect "$2" >/dev/null 2>&1; then
    echo "$who: no image registry answers; making $2 from Debian's packages (debootstrap, a minute or two)" >&2
    bash scripts/docker-offline-base.sh ${3:-} "$2" >/dev/null
  fi
  echo "$2"
}

# quietly WHAT COMMAND...: runs COMMAND, its output shown only when it fails
quietly() {
  local what="$1" log
  shift
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "$who: $what failed (above)" >&2
    exit 1
  fi
  rm -f "$log"
}
