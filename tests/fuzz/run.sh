#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build and run the fuzzers (libFuzzer + ASan + UBSan): fuzz_request
# (dynconfd's request decoding and dispatch), fuzz_answer (the agent's
# reading of a config server's answer), fuzz_oauth (dynconfd's
# OAUTHBEARER exchange and token checks) and fuzz_gssapi (its GSSAPI
# exchange and the principal-to-local rules).
#
#   tests/fuzz/run.sh [SECONDS] [WORKDIR]
#
# SECONDS: fuzzing time (default 60). WORKDIR: where the binary, seeds,
# corpus and crash artifacts go (default: a new temporary directory, removed
# after a clean run). Nothing is written into the source tree.
# Exits non-zero when the build fails or the fuzzer finds a crash, leak,
# timeout or oracle failure; the reproducer's path is printed.
#
# Needs clang-14 and libclang-rt-14-dev (Debian), libsqlite3-dev,
# libcjose-dev, libsasl2-dev and libkrb5-dev.
set -eu

SECS=${1:-60}
case $SECS in '' | *[!0-9]*) echo "usage: $0 [SECONDS] [WORKDIR]" >&2; exit 2 ;; esac
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CC=${FUZZ_CC:-clang-14}

if [ $# -ge 2 ]; then
  WORK=$2
  mkdir -p "$WORK"
  KEEP=1
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-fuzz.XXXXXX")
  KEEP=0
fi
WORK=$(cd "$WORK" && pwd)
case $WORK/ in "$SRC"/*) echo "$0: WORKDIR must be outside the source tree" >&2; exit 2 ;; esac

command -v "$CC" >/dev/null 2>&1 || {
  echo "$0: $CC not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
}

# Every library source of the codec, shared helpers, client (the broker's
# forwarder uses it) and broker; the target
# drives dc_broker_handle() directly, so the event loop is not needed.
SOURCES=
for f in "$SRC"/lib/common/*.c "$SRC"/lib/codec/*.c "$SRC"/lib/client/*.c \
  "$SRC"/lib/broker/*/*.c; do
  # The event loop (net/server*), the HTTP listener and the Kafka-backed store (it needs
  # librdkafka) are left out; the store is SQLite here.
  case $f in */lib/broker/net/server*.c | */lib/broker/store/transfer.c | */lib/broker/store/store_kafka*.c | \
    */lib/broker/net/http.c | \
    */lib/broker/store/store_record.c)
    continue ;;
  esac
  SOURCES="$SOURCES $f"
done

echo "fuzz: building in $WORK"
# What configure would write: config.h (lib/client names its version)
# and dynconf_version.h (the public header's), from configure.ac.
printf '#define PACKAGE_VERSION "fuzz"\n' >"$WORK/config.h"
v() { sed -n "s/^m4_define(\[dc_$1\], \[\([0-9]*\)\])$/\1/p" "$SRC/configure.ac"; }
printf '#define DYNCONF_VERSION 0x%02x%02x%02x\n#define DYNCONF_VERSION_STR "%s.%s.%s"\n' \
  "$(v major)" "$(v minor)" "$(v patch)" "$(v major)" "$(v minor)" "$(v patch)" \
  >"$WORK/dynconf_version.h"
# build NAME SOURCES...: one target with libFuzzer + ASan + UBSan.
build() {
  name=$1
  shift
  # shellcheck disable=SC2068 # the sources are paths without spaces
  "$CC" -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
    -Wall -Wextra -Werror \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I "$SRC/include" -I "$SRC/lib" -I "$WORK" \
    -o "$WORK/$name" "$SRC/tests/fuzz/$name.c" $@ \
    -lsqlite3 -ljansson -lcjose -lssl -lcrypto $SASL_FLAGS -lpthread
}
SASL_FLAGS=$(pkg-config --cflags --libs libsasl2 krb5-gssapi krb5)
# shellcheck disable=SC2086 # SOURCES is a word list of paths without spaces
build fuzz_request $SOURCES
# The agent's reading of a server's answer: pure, so only what it needs.
build fuzz_answer "$SRC"/lib/common/*.c "$SRC"/lib/codec/*.c \
  "$SRC/lib/agent/answer.c" "$SRC/lib/agent/resolve.c" "$SRC/lib/agent/public_errors.c"
# dynconfd's OAUTHBEARER exchange and token checks.
# shellcheck disable=SC2086
build fuzz_oauth $SOURCES
# dynconfd's GSSAPI exchange and the principal-to-local rules.
# shellcheck disable=SC2086
build fuzz_gssapi $SOURCES

for name in fuzz_request fuzz_answer fuzz_oauth fuzz_gssapi; do
  rm -rf "$WORK/seeds-$name"
  DC_FUZZ_WRITE_SEEDS="$WORK/seeds-$name" "$WORK/$name"
done
rm -rf "$WORK/artifacts" # findings of an earlier run in a given WORKDIR
mkdir -p "$WORK/artifacts"

# Tokens the mutator may splice in: config keys, entity names, values.
cat >"$WORK/dict" <<'EOF'
"session.timeout.ms"
"heartbeat.interval.ms"
"acks"
"linger.ms"
"debug"
"partition.assignment.strategy"
"max.poll.interval.ms"
"compression.type"
"<default>"
"bench-client"
"all"
"-1"
"30000"
"range,roundrobin"
"\x00\x00\x00\x00"
"\xff\xff\xff\xff"
"\xff\xff"
"\x00\x09"
"\x00\x04"
"\x00\x0a"
"PLAIN"
"SCRAM-SHA-256"
"SCRAM-SHA-512"
"n,,n="
",r="
"c=biws"
",p="
"\x00\x11"
"\x00\x24"
"\x4e\x20"
"\x01"
"n,,\x01auth=Bearer "
"n,a="
"eyJhbGciOiJub25lIn0."
"eyJhbGciOiJSUzI1NiJ9."
"\"exp\":"
"\"sub\":"
"GSSAPI"
"\x60\x82"
"\x06\x09\x2a\x86\x48\x86\xf7\x12\x01\x02\x02"
"\x01\x00"
"\x02\x01"
"RULE:["
"DEFAULT"
"s/"
"/g"
"/L"
"$0"
"$1"
"@FUZZ.TEST"
EOF

# run NAME SECONDS: fuzzes one target; a finding fails the script.
run() {
  name=$1
  mkdir -p "$WORK/corpus-$name"
  echo "fuzz: running $name for ${2}s"
  set +e
  # Crashes, leaks, oracle aborts and timeouts all make libFuzzer exit
  # non-zero and write an artifact. -max_len must stay >= SEED_MAX in
  # fuzz_request.c: the hostile seeds (up to 60 KB) would be cut otherwise.
  "$WORK/$name" -max_len=65536 -max_total_time="$2" -timeout=25 \
    -rss_limit_mb=2048 -dict="$WORK/dict" -print_final_stats=1 \
    -artifact_prefix="$WORK/artifacts/$name-" "$WORK/corpus-$name" \
    "$WORK/seeds-$name" >"$WORK/$name.log" 2>&1
  rc=$?
  set -e
  tail -n 25 "$WORK/$name.log"
  crashes=$(find "$WORK/artifacts" -type f -name "$name-*" | wc -l)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "fuzz: FAILED (exit $rc, $crashes artifact(s)); log $WORK/$name.log" >&2
    for a in "$WORK"/artifacts/"$name"-*; do
      [ -f "$a" ] && echo "fuzz: reproduce with: $WORK/$name $a" >&2
    done
    exit 1
  fi
}
run fuzz_request "$SECS"
# A smaller surface: a third of the time (at least 5 s).
ASECS=$((SECS / 3))
[ "$ASECS" -ge 5 ] || ASECS=5
run fuzz_answer "$ASECS"
run fuzz_oauth "$ASECS"
run fuzz_gssapi "$ASECS"
echo "fuzz: no crashes in ${SECS}s + 3 x ${ASECS}s ($(find "$WORK"/corpus-* -type f | wc -l) new corpus units)"
[ "$KEEP" -eq 1 ] || rm -rf "$WORK"
exit 0
