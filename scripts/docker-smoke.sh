#!/usr/bin/env bash
# Builds the cursor2api image offline, twice (the real multi-stage
# Dockerfile on a build image made from the local Go toolchain, and the
# scratch image around a host-built binary), runs each with --network host
# against a fake upstream on loopback, waits for its HEALTHCHECK, calls
# /health, /ready, /v1/models and a streamed chat completion, checks that
# the process is not root, and prints the image sizes.
#
# Needs a running Docker engine, Go and curl. Touches loopback only.
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

# --- a build image from the local Go toolchain ----------------------------
# No registry is reachable, so golang:* cannot be pulled: the toolchain
# this script runs with becomes the build image instead (exec-form RUN in
# the Dockerfile means it needs no shell).
goroot=$(go env GOROOT)
goversion=$(go env GOVERSION)
build_image="cursor2api-build/go:${goversion#go}"
if ! docker image inspect "$build_image" >/dev/null 2>&1; then
  step "making the build image $build_image from $goroot"
  mkdir -p "$work/goimg/usr/local" "$work/goimg/etc/ssl/certs" "$work/goimg/tmp"
  chmod 1777 "$work/goimg/tmp"
  cp /etc/ssl/certs/ca-certificates.crt "$work/goimg/etc/ssl/certs/"
  tar -C "$goroot" --exclude=./test --exclude=./api --exclude=./doc --exclude=./misc -cf - . \
    | (mkdir -p "$work/goimg/usr/local/go" && tar -C "$work/goimg/usr/local/go" -xf -)
  tar -C "$work/goimg" -cf - . | docker import \
    --change 'ENV PATH=/usr/local/go/bin:/usr/bin:/bin' \
    --change 'ENV HOME=/tmp GOCACHE=/tmp/gocache GOPATH=/tmp/go GOTOOLCHAIN=local GOPROXY=off' \
    - "$build_image" >/dev/null
  rm -rf "$work/goimg"
fi

# --- the build context, with the modules vendored -------------------------
step "staging the build context (go mod vendor: the build needs no network)"
mkdir -p "$work/ctx"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/ctx" 2>/dev/null || true
(cd "$work/ctx" && go mod vendor)

step "docker build (multi-stage Dockerfile)"
docker build -q -t cursor2api:smoke --build-arg GO_IMAGE="$build_image" --build-arg VERSION=smoke "$work/ctx" >/dev/null

step "docker build (scratch around a host-built binary)"
mkdir -p "$work/pre"
CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath -tags=nomsgpack '-ldflags=-s -w -X main.version=smoke-prebuilt'" \
  go build -o "$work/pre/cursor2api" .
cp /etc/ssl/certs/ca-certificates.crt "$goroot/lib/time/zoneinfo.zip" "$work/pre/"
cp -r deploy/docker/rootfs "$work/pre/rootfs"
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
  grep -q '"claude-sonnet-4.6"' <<<"$out" || fail "$image: /v1/models lacks the default model: $out"
  echo "   /v1/models: lists claude-sonnet-4.6"
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
step "passed"
