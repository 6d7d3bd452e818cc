#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds a newer librdkafka than Debian 12's 2.0.2 (the shared library
# only) for the agent's cross-version tests:
#   scripts/build-librdkafka.sh DIR     ->  DIR/librdkafka.so.1
# An application that links a newer librdkafka loads it in place of 2.0.2
# (same soname), so LD_LIBRARY_PATH=DIR runs the suite's programs on it.
# The source comes from the npm registry, which the build machines reach:
# Confluent's JavaScript client ships librdkafka's source tree. The package
# is pinned and checked against its published sha512. A DIR that already
# holds this version is kept.
set -e
VERSION=2.15.1
HEXVERSION=0x020f01ff
PKG_URL=https://registry.npmjs.org/@confluentinc/kafka-javascript/-/kafka-javascript-1.10.1.tgz
PKG_SHA512=KVePUBn21EqCVP9mfxzEuM3SYJHHEF7X+iiC2e43QQgDSyEaksInmCGooT3w5q+cNAdkSCrK71j0ICfqoSqZLw==

dir=${1:?usage: scripts/build-librdkafka.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -f "$dir/librdkafka.so.1" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-rdkafka.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "librdkafka $VERSION: fetching its source ($PKG_URL)" >&2
curl -fsS --retry 3 -o "$tmp/pkg.tgz" "$PKG_URL"
got=$(openssl dgst -sha512 -binary "$tmp/pkg.tgz" | base64 -w0)
if [ "$got" != "$PKG_SHA512" ]; then
  echo "build-librdkafka: $PKG_URL has sha512 $got, expected $PKG_SHA512" >&2
  exit 1
fi
tar xzf "$tmp/pkg.tgz" -C "$tmp" package/deps/librdkafka
cd "$tmp/package/deps/librdkafka"
if ! grep -q "define RD_KAFKA_VERSION $HEXVERSION" src/rdkafka.h; then
  echo "build-librdkafka: the package does not hold librdkafka $VERSION" >&2
  exit 1
fi

echo "librdkafka $VERSION: building (a few minutes)" >&2
if ! ./configure --no-download --disable-zstd --disable-gssapi --disable-curl \
  --disable-lz4-ext --enable-ssl --disable-debug-symbols >"$tmp/configure.log" 2>&1; then
  tail -20 "$tmp/configure.log" >&2
  exit 1
fi
if ! make -C src -j"$(nproc)" librdkafka.so.1 >"$tmp/make.log" 2>&1; then
  tail -30 "$tmp/make.log" >&2
  exit 1
fi
cp src/librdkafka.so.1 "$dir/librdkafka.so.1"
echo "$VERSION" >"$dir/VERSION"
echo "librdkafka $VERSION: $dir/librdkafka.so.1" >&2
