# syntax=docker/dockerfile:1
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/cursor2api .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cursor2api /cursor2api
ENV HOST=0.0.0.0 PORT=8002
EXPOSE 8002
USER nonroot:nonroot
ENTRYPOINT ["/cursor2api"]
