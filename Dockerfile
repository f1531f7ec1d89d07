# syntax=docker/dockerfile:1
# Static, non-root, read-only-friendly image: the agent needs no writable path.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/driftwatch ./cmd/agent

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/driftwatch /driftwatch
USER 65532:65532
EXPOSE 9742
ENTRYPOINT ["/driftwatch"]
