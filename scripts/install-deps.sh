#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian 12 packages dynconf needs to build, demo and test
# (Java and Maven run the real Kafka cluster of make check-kafka; iproute2
# and nftables make its network partition).
# Does nothing when they are all present. Needs root (or sudo) to install.
set -e
PKGS="build-essential autoconf automake libtool pkg-config perl
      librdkafka-dev libjemalloc-dev libsqlite3-dev libjansson-dev libcjose-dev
      libmicrohttpd-dev python3-prometheus-client libsystemd-dev systemd
      debhelper dpkg-dev fakeroot lintian man-db groff-base
      libssl-dev openssl curl zlib1g-dev
      libsasl2-dev libsasl2-modules-gssapi-mit libkrb5-dev krb5-kdc krb5-admin-server
      krb5-user
      python3-gssapi
      python3 python3-venv python3-kafka python3-jwt python3-cryptography kcat clang
      libclang-rt-14-dev valgrind
      openjdk-17-jre-headless maven iproute2 nftables"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "Installing missing packages:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
