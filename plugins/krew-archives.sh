#!/usr/bin/env bash
# Builds the kubectl-driftwatch release archives krew installs and writes their
# version, URIs and sha256 into plugins/driftwatch.yaml.
#   bash plugins/krew-archives.sh v0.1.0 [OUT_DIR]   (default OUT_DIR: dist/)
# MANIFEST_OUT=FILE writes the manifest there instead (tests).
# PLATFORMS="os/arch ..." builds only those (tests: a cold cross-build of all five
# takes over 10 minutes on 2 cores); the others keep their sha256 as they are.
# The archives are reproducible: -trimpath, fixed ldflags, sorted tar entries
# with a fixed owner and time, gzip without a name or time stamp.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: krew-archives.sh VERSION [OUT_DIR]}
out=${2:-dist}
case "$version" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "version $version: want vMAJOR.MINOR.PATCH" >&2; exit 2 ;; esac
mkdir -p "$out"
manifest=plugins/driftwatch.yaml
manifest_out=${MANIFEST_OUT:-$manifest}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sed -e "s|^  version: .*|  version: $version|" \
    -e "s|releases/download/v[^/]*/kubectl-driftwatch_v[^_]*_|releases/download/$version/kubectl-driftwatch_${version}_|" "$manifest" > "$tmp/m.yaml"
for p in ${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}; do
  os=${p%/*}; arch=${p#*/}; exe=kubectl-driftwatch; [ "$os" = windows ] && exe=kubectl-driftwatch.exe
  d="$tmp/$os-$arch"; mkdir -p "$d"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -buildid= -X main.version=$version -X main.revision=$version" -o "$d/$exe" ./cmd/kubectl-driftwatch
  a="$out/kubectl-driftwatch_${version}_${os}_${arch}.tar.gz"
  tar -C "$d" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00:00Z' -cf - "$exe" | gzip -n -9 > "$a"
  sum=$(sha256sum "$a" | cut -d' ' -f1)
  # the sha256 line after this platform's uri
  awk -v uri="kubectl-driftwatch_${version}_${os}_${arch}.tar.gz" -v sum="$sum" '
    index($0, uri) { print; hit=1; next }
    hit && /sha256:/ { sub(/sha256: .*/, "sha256: \"" sum "\""); hit=0 }
    { print }' "$tmp/m.yaml" > "$tmp/m2.yaml" && mv "$tmp/m2.yaml" "$tmp/m.yaml"
  echo "$a $sum"
done
cp "$tmp/m.yaml" "$manifest_out"
