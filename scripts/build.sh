#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Configures and builds dynconf out of tree: scripts/build.sh BUILDDIR [configure args]
set -e
src=$(cd "$(dirname "$0")/.." && pwd)
build=$1
shift
[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null 2>&1)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$src/configure" -q "$@"
make -j"$(nproc)" >/dev/null
