#!/usr/bin/env bash
# make release: the provider's release artefacts, built offline, in the layout goreleaser
# (.goreleaser.yml) and the Terraform registry use, plus two mirror layouts a CI pipeline can
# install from without a registry.
#
#   dist/terraform-provider-proxy_<v>_<os>_<arch>.zip      one per platform; the binary inside
#                                                           is terraform-provider-proxy_v<v>
#   dist/terraform-provider-proxy_<v>_SHA256SUMS            sha256 of every zip and the manifest
#   dist/terraform-provider-proxy_<v>_manifest.json         terraform-registry-manifest.json
#   dist/mirror/registry.terraform.io/proxy-operator/proxy/ a filesystem mirror (packed layout:
#                                                           the zips under their own names) and
#                                                           a network mirror (index.json and
#                                                           <v>.json with each zip's zh: hash)
#   dist/mirror/registry.opentofu.org/proxy-operator/proxy/ the same for OpenTofu, whose
#                                                           default registry host this is: a
#                                                           configuration's "proxy-operator/proxy"
#                                                           means this address under tofu
#
# Nothing is signed: signing needs the release key (goreleaser's signs: block, GPG_FINGERPRINT)
# and happens only where a release is published. See the README, "Against a real cluster"
# (installing from the mirrors, and publishing).
#
# VERSION (default: the last git tag without its v, else 0.0.0-dev), PLATFORMS (default: linux,
# darwin, windows and freebsd on amd64 and arm64, os_arch words), DIST (default: dist). A
# mirror directory that already holds other versions keeps them, so several versions can be
# mirrored side by side (index.json lists every version found).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

NAME=terraform-provider-proxy
# The registry hosts the mirror serves the provider under: Terraform's and OpenTofu's default
# ones, so that source = "proxy-operator/proxy" installs from the mirror under either CLI.
SOURCE_HOSTS="registry.terraform.io registry.opentofu.org"
SOURCE_NS=proxy-operator
SOURCE_TYPE=proxy

VERSION="${VERSION:-}"
if [[ -z "$VERSION" ]]; then
	VERSION="$(git describe --tags --abbrev=0 2>/dev/null || true)"
	VERSION="${VERSION#v}"
	VERSION="${VERSION:-0.0.0-dev}"
fi
VERSION="${VERSION#v}"
# Terraform accepts only semantic versions in a provider's file names.
if ! [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release: VERSION=$VERSION is not a semantic version (x.y.z or x.y.z-pre)" >&2
	exit 1
fi
PLATFORMS="${PLATFORMS:-linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64 freebsd_amd64 freebsd_arm64}"
DIST="${DIST:-dist}"
mkdir -p "$DIST"
DIST="$(cd "$DIST" && pwd)"

for tool in go zip sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || { echo "release: $tool is not on PATH" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Reproducible zips: every file gets the commit's time, as goreleaser's mod_timestamp does.
stamp="$(git log -1 --format=%cd --date=format:%Y%m%d%H%M.%S 2>/dev/null || echo 202601010000.00)"

zips=()
for p in $PLATFORMS; do
	os="${p%_*}"
	arch="${p#*_}"
	bin="${NAME}_v${VERSION}"
	[[ "$os" == windows ]] && bin="${bin}.exe"
	dir="$work/$p"
	mkdir -p "$dir"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath \
		-ldflags "-s -w -X main.version=${VERSION}" -o "$dir/$bin" .
	touch -t "$stamp" "$dir/$bin"
	zip="${NAME}_${VERSION}_${os}_${arch}.zip"
	rm -f "$DIST/$zip"
	(cd "$dir" && zip -q -X "$DIST/$zip" "$bin")
	zips+=("$zip")
	echo "release: $zip"
done

manifest="${NAME}_${VERSION}_manifest.json"
cp terraform-registry-manifest.json "$DIST/$manifest"
(cd "$DIST" && sha256sum "${zips[@]}" "$manifest" >"${NAME}_${VERSION}_SHA256SUMS")
echo "release: ${NAME}_${VERSION}_SHA256SUMS"

# The mirrors. A filesystem mirror in the packed layout holds the release zips as they are;
# a network mirror serves index.json (the versions) and <version>.json (one archive per
# platform, url relative to the JSON, with the zip's zh: hash: the sha256 the registry's
# SHA256SUMS gives).
for host in $SOURCE_HOSTS; do
	mirror="$DIST/mirror/$host/$SOURCE_NS/$SOURCE_TYPE"
	mkdir -p "$mirror"
	for z in "${zips[@]}"; do
		# A hard link where the file system allows it: one copy of each zip on disk.
		ln -f "$DIST/$z" "$mirror/$z" 2>/dev/null || cp "$DIST/$z" "$mirror/$z"
	done
	{
		printf '{\n  "archives": {\n'
		first=1
		for z in "$mirror/${NAME}_${VERSION}_"*.zip; do
			base="$(basename "$z")"
			plat="${base#"${NAME}_${VERSION}_"}"
			plat="${plat%.zip}"
			sum="$(sha256sum "$z" | cut -d' ' -f1)"
			[[ $first == 1 ]] || printf ',\n'
			first=0
			printf '    "%s": {"url": "%s", "hashes": ["zh:%s"]}' "$plat" "$base" "$sum"
		done
		printf '\n  }\n}\n'
	} >"$mirror/$VERSION.json"
	{
		printf '{\n  "versions": {\n'
		first=1
		for j in $(cd "$mirror" && ls -1 *.json | grep -v '^index\.json$' | sort -V); do
			[[ $first == 1 ]] || printf ',\n'
			first=0
			printf '    "%s": {}' "${j%.json}"
		done
		printf '\n  }\n}\n'
	} >"$mirror/index.json"
done
echo "release: mirror at $DIST/mirror (filesystem_mirror and network_mirror layouts)"
