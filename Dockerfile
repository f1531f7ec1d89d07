# syntax=docker/dockerfile:1
# Static, non-root, read-only-friendly image: the agent needs no writable path.
# GO_IMAGE and BASE_IMAGE name the public images by default; the node e2e tests
# (test/e2e/node) build this file offline with local stand-ins for both.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/driftwatch ./cmd/agent

FROM ${BASE_IMAGE}
COPY --from=build /out/driftwatch /driftwatch
USER 65532:65532
EXPOSE 9742
ENTRYPOINT ["/driftwatch"]
