#!/usr/bin/env bash
# Builds the cursor2api image offline, twice: the real multi-stage
# Dockerfile, with no build arguments, on a golang:1.26-bookworm made here
# with debootstrap and the local Go toolchain; and the scratch image around
# a host-built binary. Runs each with --network host against a fake
# upstream on loopback, waits for its HEALTHCHECK, calls /health, /ready,
# /v1/models and a streamed chat completion, checks that the process is not
# root, and prints the image sizes. Then brings up docker-compose.yml as
# shipped and checks it.
#
# Needs a running Docker engine, Go and curl (debootstrap, docker-compose
# optional). The gateway and its fake touch loopback only; debootstrap
# downloads from Debian's mirror (DEBIAN_MIRROR).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

if ! docker info >/dev/null 2>&1; then
  echo "docker-smoke: no Docker engine answers; nothing tested" >&2
  exit 1
fi

work=$(mktemp -d)
containers=()
fake_pid=""
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "== docker-smoke: $*"; }
fail() { echo "docker-smoke: FAIL: $*" >&2; exit 1; }

# --- the fake upstream, on the host's loopback --------------------------
step "starting the fake upstream"
go build -o "$work/fakeupstream" ./scripts/fakeupstream
"$work/fakeupstream" -addr 127.0.0.1:0 -reply "Hello from the fake upstream." >"$work/fake.out" 2>&1 &
fake_pid=$!
for _ in $(seq 50); do grep -q '^listening on' "$work/fake.out" && break; sleep 0.1; done
up_addr=$(sed -n 's/^listening on //p' "$work/fake.out")
[ -n "$up_addr" ] || fail "the fake upstream did not start: $(cat "$work/fake.out")"

# --- the build image the Dockerfile names ------------------------------
# No registry is reachable, so the Dockerfile's default build image
# (golang:1.26-bookworm) cannot be pulled. It is made here as its
# publisher makes it: a Debian bookworm root from debootstrap with the
# Go toolchain in /usr/local/go, tagged with the name the Dockerfile uses,
# so that the real Dockerfile builds with no build arguments. Where
# debootstrap or Debian's mirror is missing, the toolchain alone becomes a
# build image passed as GO_IMAGE (exec-form RUN needs no shell), and the
# script says so.
goroot=$(go env GOROOT)
goversion=$(go env GOVERSION)
default_go_image=$(sed -n 's/^ARG GO_IMAGE=//p' Dockerfile)
build_args=()
go_image_env=(
  --change "ENV GOLANG_VERSION=${goversion#go} GOTOOLCHAIN=local GOPATH=/go"
  --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'WORKDIR /go'
)
copy_goroot() { # into $1/usr/local/go, without what a build never reads
  mkdir -p "$1/usr/local/go"
  tar -C "$goroot" --exclude=./test --exclude=./api --exclude=./doc --exclude=./misc -cf - . | tar -C "$1/usr/local/go" -xf -
}
if docker image inspect "$default_go_image" >/dev/null 2>&1; then
  step "using the build image $default_go_image already here"
elif [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null 2>&1 && {
  step "making $default_go_image: debootstrap bookworm from ${DEBIAN_MIRROR:=http://deb.debian.org/debian} plus $goversion"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { echo "   debootstrap failed: $(tail -n 3 "$work/debootstrap.log")"; false; }
}; then
  copy_goroot "$work/rootfs"
  tar -C "$work/rootfs" -cf - . | docker import "${go_image_env[@]}" - "$default_go_image" >/dev/null
  rm -rf "$work/rootfs"
else
  fallback_image="cursor2api-build/go:${goversion#go}"
  echo "== docker-smoke: NOTE: no debootstrap (or not root, or no mirror): $fallback_image, the Go toolchain alone, stands in for $default_go_image"
  if ! docker image inspect "$fallback_image" >/dev/null 2>&1; then
    mkdir -p "$work/goimg/etc/ssl/certs" "$work/goimg/tmp"
    chmod 1777 "$work/goimg/tmp"
    cp /etc/ssl/certs/ca-certificates.crt "$work/goimg/etc/ssl/certs/"
    copy_goroot "$work/goimg"
    tar -C "$work/goimg" -cf - . | docker import "${go_image_env[@]}" --change 'ENV HOME=/tmp GOCACHE=/tmp/gocache' - "$fallback_image" >/dev/null
    rm -rf "$work/goimg"
  fi
  build_args+=(--build-arg GO_IMAGE="$fallback_image")
fi

# --- the build context, with the modules vendored -------------------------
step "staging the build context (go mod vendor: the build needs no network)"
mkdir -p "$work/ctx"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/ctx" 2>/dev/null || true
(cd "$work/ctx" && go mod vendor)

# --network none proves the build offline.
step "docker build (the multi-stage Dockerfile, no network)"
docker build -q --network none -t cursor2api:smoke "${build_args[@]}" --build-arg VERSION=smoke "$work/ctx" >/dev/null

step "docker build (scratch around a host-built binary)"
mkdir -p "$work/pre"
CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath -tags=nomsgpack '-ldflags=-s -w -X main.version=smoke-prebuilt'" \
  go build -o "$work/pre/cursor2api" .
cp /etc/ssl/certs/ca-certificates.crt "$goroot/lib/time/zoneinfo.zip" "$work/pre/"
cp -r deploy/docker/rootfs "$work/pre/rootfs"
mkdir -p "$work/pre/data"
docker build -q -t cursor2api:smoke-prebuilt -f deploy/docker/Dockerfile.prebuilt "$work/pre" >/dev/null

# --- run and probe each image ---------------------------------------------
smoke() {
  local image=$1 version=$2
  local port=$(( 20000 + RANDOM % 20000 ))
  local name="cursor2api-smoke-$$-$port"
  local base="http://127.0.0.1:$port"
  step "running $image on 127.0.0.1:$port"
  docker run -d --name "$name" --network host \
    -e HOST=127.0.0.1 -e PORT="$port" -e API_KEY=sk-smoke \
    -e CURSOR_API_URL="http://$up_addr/api/chat" -e X_IS_HUMAN_MODE=static:smoke -e TLS_FINGERPRINT=off \
    --health-interval=1s --health-start-period=1s "$image" >/dev/null
  containers+=("$name")

  local health=""
  for _ in $(seq 60); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$name" 2>/dev/null || echo gone)
    [ "$health" = healthy ] && break
    [ "$health" = gone ] && break
    sleep 1
  done
  if [ "$health" != healthy ]; then
    docker logs "$name" >&2 || true
    fail "$image: HEALTHCHECK says '$health' after 60 s"
  fi
  echo "   HEALTHCHECK: healthy"

  local out
  out=$(curl -fsS "$base/health") || fail "$image: /health"
  grep -q "\"version\":\"$version\"" <<<"$out" || fail "$image: /health does not report version $version: $out"
  echo "   /health: $out"
  out=$(curl -fsS "$base/ready") || fail "$image: /ready is not 200: $(curl -sS "$base/ready")"
  echo "   /ready: $(head -c 300 <<<"$out")"
  out=$(curl -fsS -H 'Authorization: Bearer sk-smoke' "$base/v1/models") || fail "$image: /v1/models"
  grep -q '"gemini-3-flash"' <<<"$out" || fail "$image: /v1/models lacks the model learned from the upstream: $out"
  echo "   /v1/models: lists gemini-3-flash, learned from the upstream (MODELS=auto)"
  out=$(curl -fsS -N -H 'Authorization: Bearer sk-smoke' -H 'Content-Type: application/json' \
    -d '{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
    "$base/v1/chat/completions") || fail "$image: streamed chat completion"
  grep -q '"content":"Hello ' <<<"$out" || fail "$image: the stream lacks the fake upstream's text: $out"
  grep -q '^data: \[DONE\]' <<<"$out" || fail "$image: the stream does not end with [DONE]: $out"
  echo "   /v1/chat/completions (stream): $(grep -c '^data: ' <<<"$out") events, ends with [DONE]"
  out=$(curl -fsS "$base/ready") || fail "$image: /ready after a turn"
  grep -q '"last_success"' <<<"$out" || fail "$image: /ready does not show the upstream success: $out"
  echo "   /ready after the turn: upstream last_success $(sed -n 's/.*"last_success_age":"\([^"]*\)".*/\1/p' <<<"$out") ago"

  local pid uid
  pid=$(docker inspect -f '{{.State.Pid}}' "$name")
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [ "$uid" != 0 ] || fail "$image: the gateway runs as root"
  echo "   runs as uid $uid (user $(docker inspect -f '{{.Config.User}}' "$image"))"
  echo "   image size: $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.1f MB (%d bytes)", $1/1e6, $1}')," \
    "$(docker save "$image" | gzip -c | wc -c | awk '{printf "%.1f MB", $1/1e6}') gzipped"
  docker rm -f "$name" >/dev/null
}

smoke cursor2api:smoke smoke
smoke cursor2api:smoke-prebuilt smoke-prebuilt

# --- docker-compose.yml, as shipped ----------------------------------------
# The shipped file publishes 127.0.0.1:8002 on Docker's bridge network; an
# override file only swaps in the image built above, so nothing is rebuilt.
compose=()
if docker compose version >/dev/null 2>&1; then compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then compose=(docker-compose)
fi
if [ ${#compose[@]} -eq 0 ]; then
  echo "== docker-smoke: SKIPPED docker-compose.yml: neither 'docker compose' nor docker-compose is installed"
elif (exec 3<>/dev/tcp/127.0.0.1/8002) 2>/dev/null; then
  echo "== docker-smoke: SKIPPED docker-compose.yml: something already listens on 127.0.0.1:8002"
else
  step "docker-compose.yml (${compose[*]})"
  printf 'API_KEY=sk-smoke\nX_IS_HUMAN_MODE=static:smoke\n' >"$work/ctx/.env"
  printf 'services:\n  cursor2api:\n    image: cursor2api:smoke\n' >"$work/ctx/docker-compose.smoke.yml"
  dc() { (cd "$work/ctx" && "${compose[@]}" -p "c2asmoke$$" -f docker-compose.yml -f docker-compose.smoke.yml "$@"); }
  compose_down() { dc down -t 5 >/dev/null 2>&1 || true; }
  trap 'compose_down; cleanup' EXIT
  dc up -d --no-build >/dev/null 2>&1 || fail "compose up: $(dc up -d --no-build 2>&1 | tail -n 5)"
  name=$(dc ps -q cursor2api)
  [ -n "$name" ] || fail "compose started no cursor2api container"
  health=""
  for _ in $(seq 60); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$name" 2>/dev/null || echo gone)
    [ "$health" = healthy ] || [ "$health" = gone ] && break
    sleep 1
  done
  [ "$health" = healthy ] || { dc logs >&2 || true; fail "compose: the healthcheck says '$health' after 60 s"; }
  echo "   healthcheck: healthy"
  out=$(curl -fsS http://127.0.0.1:8002/health) || fail "compose: /health on the published port"
  echo "   /health on 127.0.0.1:8002: $out"
  out=$(curl -fsS -H 'Authorization: Bearer sk-smoke' http://127.0.0.1:8002/v1/models) || fail "compose: /v1/models with the key from .env"
  grep -q '"gemini-3-flash"' <<<"$out" || fail "compose: /v1/models lacks the default model: $out"
  code=$(curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:8002/v1/models)
  [ "$code" = 401 ] || fail "compose: /v1/models without the key from .env answered $code, want 401"
  echo "   API_KEY from .env: 200 with it, 401 without"
  policy=$(docker inspect -f '{{.HostConfig.RestartPolicy.Name}} read-only={{.HostConfig.ReadonlyRootfs}}' "$name")
  [ "$policy" = "unless-stopped read-only=true" ] || fail "compose: restart policy and root: $policy"
  echo "   restart: $policy"
  compose_down
fi
step "passed"
