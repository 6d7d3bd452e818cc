#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Moving between stores: dynconfd --export writes every entity (clients,
# <default>, users, user+client-ids, relayed unknown keys, non-ASCII names)
# as JSON while the server runs; --import fills an empty data directory
# from it, all or nothing; the imported server describes exactly what the
# first one did, and a second export is byte-identical. Bad documents are
# refused with the entity, key or JSON position named, and nothing is
# written.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
A="$DC_TMP/a"
B="$DC_TMP/b"
EX="$DC_TMP/export.json"

cli() {
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
    --timeout-ms 5000 "$@"
}
dynconfd() { timeout 60 "$DC_DYNCONFD" "$@"; }

# describe_all: every entity's own overrides, one block per entity, in a
# fixed order (the same CLI calls on both servers).
describe_all() {
  cli --entity-type clients --entity-default --describe --json
  local c
  for c in app-1 ünï; do
    cli --entity-type clients --entity-name "$c" --describe --json
  done
  cli --entity-type users --entity-name 'CN=alice smith,O=x' --describe --json
  cli --entity-type users --entity-name alice --entity-type clients \
    --entity-name 'a/b' --describe --json
}

# ---- a server with one entity of each kind --------------------------------
dc_start_daemon "$A" --allow-unknown-keys || tap_bail "dynconfd did not start"
cli --entity-type clients --entity-default --alter \
  --add-config 'session.timeout.ms=30000' >/dev/null &&
  cli --entity-type clients --entity-name app-1 --alter \
    --add-config 'acks=all,linger.ms=5' >/dev/null &&
  cli --entity-type clients --entity-name ünï --alter \
    --add-config 'my.custom=say "hi"' >/dev/null &&
  cli --entity-type users --entity-name 'CN=alice smith,O=x' --alter \
    --add-config 'acks=1' >/dev/null &&
  cli --entity-type users --entity-name alice --entity-type clients \
    --entity-name 'a/b' --alter --add-config 'acks=0' >/dev/null
tap_is $? 0 "five entities altered on server A"
before=$(describe_all)
tap_like "$before" '"acks"' "A describes them"

out=$(dynconfd --data-dir "$A" --export "$EX" 2>&1)
tap_is $? 0 "--export while the server runs (exit 0) $out"
python3 - "$EX" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["format"] == "dynconf-export" and d["version"] == 1, d
names = [(e["type"], e["name"]) for e in d["entities"]]
assert names == sorted(names), names
assert len(names) == 5, names
assert {"type": "client", "name": "ünï",
        "configs": {"my.custom": 'say "hi"'}} in d["entities"], d
EOF
tap_is $? 0 "the export is the documented JSON: 5 entities, sorted, escaped"
tap_is "$(dynconfd --data-dir "$A" --export - | cmp - "$EX" && echo same)" \
  same "--export - writes the same bytes to stdout"
dc_stop_daemon

# ---- import into an empty directory ----------------------------------------
out=$(dynconfd --data-dir "$B" --import "$EX" 2>&1)
tap_is $? 1 "without --allow-unknown-keys the relayed key is refused"
tap_like "$out" "client 'ünï'.*my.custom.*--allow-unknown-keys" \
  "  naming the entity, the key and the flag"
tap_is "$(dynconfd --data-dir "$B" --export - | tr -d '\n')" \
  '{"format":"dynconf-export","version":1,"entities":[]}' \
  "  and nothing was written (the store exports empty)"

out=$(dynconfd --data-dir "$B" --import "$EX" --allow-unknown-keys 2>&1)
tap_is $? 0 "--import --allow-unknown-keys (exit 0)"
tap_like "$out" "imported 5 entities \(6 configs\)" "  says what it wrote"
dynconfd --data-dir "$B" --export "$DC_TMP/again.json" >/dev/null
tap_is "$(cmp "$EX" "$DC_TMP/again.json" && echo same)" same \
  "exporting the imported store gives the same bytes"
tap_like "$(dynconfd --data-dir "$B" --history)" \
  "dynconfd --import .* Import client:app-1 acks SET \(unset\) -> all" \
  "the history records the import"

dc_start_daemon "$B" --allow-unknown-keys || tap_bail "dynconfd on B did not start"
after=$(describe_all)
tap_is "$after" "$before" "server B describes every entity as A did"
dc_stop_daemon

out=$(dynconfd --data-dir "$B" --import "$EX" --allow-unknown-keys 2>&1)
tap_is $? 1 "a second import into a store with entities is refused"
tap_like "$out" "already holds entities" "  saying why"

# ---- bad documents: a sentence, nothing written ----------------------------
# bad NAME TEXT PATTERN DESCRIPTION
bad() {
  printf '%s' "$2" >"$DC_TMP/$1.json"
  rm -rf "$DC_TMP/empty-$1"
  out=$(dynconfd --data-dir "$DC_TMP/empty-$1" --import "$DC_TMP/$1.json" 2>&1)
  tap_is $? 1 "$4: refused"
  tap_like "$out" "$3" "  $4: $out"
  tap_is "$(dynconfd --data-dir "$DC_TMP/empty-$1" --export - | tr -d '\n')" \
    '{"format":"dynconf-export","version":1,"entities":[]}' \
    "  $4: nothing written (the store exports empty)"
}
H='{"format":"dynconf-export","version":1,"entities":['
bad syntax "$H"'{"type":"client"' "syntax.json:1:[0-9]+:" "broken JSON names line and column"
bad format '{"format":"x","version":1,"entities":[]}' "not a dynconf export" "another format"
bad version '{"format":"dynconf-export","version":2,"entities":[]}' \
  "unsupported export version" "a newer version"
bad member "$H"'],"extra":1}' "unknown member 'extra'" "an unknown member"
bad value "$H"'{"type":"client","name":"c","configs":{"acks":"maybe"}}]}' \
  "entity #1 \(client 'c'\), key 'acks'" "an invalid value"
bad number "$H"'{"type":"client","name":"c","configs":{"linger.ms":5}}]}' \
  "must be a JSON string" "a number where a string belongs"
bad type "$H"'{"type":"topic","name":"t","configs":{}}]}' \
  "neither client nor user" "an unknown entity type"
bad twice "$H"'{"type":"client","name":"c","configs":{}},{"type":"client","name":"c","configs":{}}]}' \
  "entity #2 .* named twice" "an entity twice"
bad twiceuser "$H"'{"type":"user","name":"a b","configs":{}},{"type":"user","name":"a%20b","configs":{}}]}' \
  "entity #2 .* named twice" "one user in two spellings"
bad dupkey "$H"'{"type":"client","name":"c","configs":{"acks":"1","acks":"0"}}]}' \
  "duplicate object key" "a key twice"
bad emptyname "$H"'{"type":"client","name":"","configs":{}}]}' \
  "client-id must be 1 to 255 bytes" "an empty client-id"
bad badfields "$H"'{"type":"client","name":"c"}]}' \
  'exactly "type", "name"' "an entity without configs"
bad missing "" "missing.json:|end of file|[Ee]mpty" "an empty file"

tap_done
