# cursor2api: a static binary on scratch, running as a non-root user.
#
# The base images are build arguments so that the image builds where no
# registry is reachable: scripts/docker-smoke.sh makes a build image from
# the local Go toolchain, tags it, and passes its name. Every RUN is in exec
# form, so the build image needs no shell.
#
#   docker build -t cursor2api .
#   docker build --build-arg GO_IMAGE=local/go:1.26 --build-arg VERSION=$(git describe --always) -t cursor2api .
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=scratch

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY . .
ARG VERSION=dev
# -s -w drop the symbol and DWARF tables; the tags drop parts of gin the
# gateway never uses (README, "Image size"). RUN is in exec form, which
# expands no variables, so the flags travel in GOFLAGS (set by ENV, which
# does). With a vendor/ directory in the context (the offline build makes
# one) go build uses it and needs no network.
ARG TAGS=nomsgpack
ENV CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath -tags=${TAGS} '-ldflags=-s -w -X main.version=${VERSION}'"
RUN ["go", "build", "-o", "/out/cursor2api", "."]
# The state directory (STATE_DIR), made here: scratch has no mkdir.
RUN ["mkdir", "-p", "/out/data"]

FROM ${RUNTIME_IMAGE}
# CA roots for the upstream's TLS, Go's time zone database (read through
# ZONEINFO), and passwd/group naming the non-root user.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /usr/local/go/lib/time/zoneinfo.zip /usr/share/zoneinfo.zip
COPY deploy/docker/rootfs/ /
COPY --from=build /out/cursor2api /cursor2api
# The embedded state store's file (kept responses, usage) lives in /data,
# owned by the non-root user; mount a volume there to keep it.
COPY --from=build --chown=65532:65532 /out/data /data
ENV HOST=0.0.0.0 PORT=8002 ZONEINFO=/usr/share/zoneinfo.zip STATE_DIR=/data
VOLUME ["/data"]
EXPOSE 8002
USER 65532:65532
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 CMD ["/cursor2api", "healthcheck"]
ENTRYPOINT ["/cursor2api"]
