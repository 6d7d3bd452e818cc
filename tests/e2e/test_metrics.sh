#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dynconfd --metrics-listen: /metrics is Prometheus text that Prometheus's
# own Python parser (Debian's python3-prometheus-client) reads, every
# family with HELP and TYPE; after real traffic (a describe, an alter
# applied, one refused as invalid, one refused by the ACLs, a SASL log-in
# and a wrong password) the counters moved by exactly that; the TLS
# listener's certificate expiry is the certificate's; /healthz and
# /readyz answer 200, other paths 404, other methods 405.
. "$(dirname "$0")/../lib.sh"

/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
  tap_bail "python3-prometheus-client is needed"
CREDS="$DC_TMP/creds"
echo 'alice-pw' | "$DC_DYNCONFD" --credentials "$CREDS" --add-user alice \
  --iterations 4096 >/dev/null || tap_bail "cannot add user alice"
cat >"$DC_TMP/acl" <<'EOF'
allow User:* all *
deny User:ANONYMOUS alter client:locked
EOF
CERTS="$DC_TMP/certs"
sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" || tap_bail "gen_certs.sh failed"
dc_start_daemon "$DC_TMP/data" \
  --listeners PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0 \
  --ssl-cert "$CERTS/server.pem" --ssl-key "$CERTS/server.key" \
  --ssl-ca "$CERTS/ca.pem" \
  --credentials "$CREDS" --acl-file "$DC_TMP/acl" \
  --metrics-listen 127.0.0.1:0 || tap_bail "dynconfd did not start"
METRICS=$(sed -n 's/^metrics on //p' "$DC_DAEMON_OUT")
SASL_PORT=$(sed -n 's/^listening on [^ ]*:\([0-9]*\) (SASL_PLAINTEXT .*/\1/p' "$DC_DAEMON_OUT")
tap_like "$METRICS" "^127\.0\.0\.1:[0-9]+$" "dynconfd says where the metrics are"

# http METHOD PATH: "STATUS BODY" of one request.
http() {
  /usr/bin/python3 - "$METRICS" "$1" "$2" <<'PY'
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], timeout=10)
c.request(sys.argv[2], sys.argv[3])
r = c.getresponse()
print(r.status, r.read().decode().strip())
PY
}
# scrape FILE: the parsed /metrics as "name{labels} value" lines, sorted;
# fails when the text does not parse or a family lacks HELP or TYPE.
scrape() {
  /usr/bin/python3 - "$METRICS" >"$1" <<'PY'
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10).read().decode()
helps = {l.split()[2] for l in text.splitlines() if l.startswith("# HELP ")}
types = {l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")}
out = []
for fam in text_string_to_metric_families(text):
    if fam.name not in helps and fam.name + "_total" not in helps:
        sys.exit("no HELP for " + fam.name)
    if fam.name not in types and fam.name + "_total" not in types:
        sys.exit("no TYPE for " + fam.name)
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        out.append("%s{%s} %r" % (s.name, labels, float(s.value)))
print("\n".join(sorted(out)))
PY
}
# value FILE NAME LABELS: the sample's value, 0 when absent.
value() {
  awk -v k="$2{$3}" '$1 == k { v = $2 } END { print v == "" ? 0 : v + 0 }' "$1"
}
delta() { # delta NAME LABELS: after - before
  echo $(($(value "$DC_TMP/after" "$1" "$2" | cut -d. -f1) - $(value "$DC_TMP/before" "$1" "$2" | cut -d. -f1)))
}

scrape "$DC_TMP/before"
tap_is $? 0 "/metrics parses with Prometheus's parser, every family with HELP and TYPE"

tap_isnt() { tap_ok "$([ "$1" != "$2" ] && echo 0 || echo 1)" "$3"; }
cli() {
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
    --entity-type clients "$@" >/dev/null 2>&1
}
cli --entity-name app --alter --add-config acks=1
tap_is $? 0 "an alter applied"
cli --entity-name app --alter --add-config acks=7
tap_isnt $? 0 "an invalid alter refused"
cli --entity-name locked --alter --add-config acks=1
tap_isnt $? 0 "an alter the ACLs refuse"
cli --entity-name app --describe
tap_is $? 0 "a describe"
printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanisms=SCRAM-SHA-256 \
  sasl.username=alice sasl.password=alice-pw >"$DC_TMP/good.props"
printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanisms=SCRAM-SHA-256 \
  sasl.username=alice sasl.password=wrong >"$DC_TMP/bad.props"
for p in good bad; do
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$SASL_PORT" \
    --command-config "$DC_TMP/$p.props" --entity-type clients \
    --entity-name app --describe >/dev/null 2>&1
done
scrape "$DC_TMP/after"

A='api=IncrementalAlterConfigs'
tap_is "$(delta dynconfd_requests_total "$A,error=NONE,version=1")" 1 \
  "requests_total: the applied alter, error NONE"
tap_is "$(delta dynconfd_requests_total "$A,error=INVALID_CONFIG,version=1")" 1 \
  "  the invalid one, INVALID_CONFIG"
tap_is "$(delta dynconfd_requests_total "$A,error=CLUSTER_AUTHORIZATION_FAILED,version=1")" 1 \
  "  the one the ACLs refused"
tap_is "$(delta dynconfd_request_duration_seconds_count "$A")" 3 \
  "request_duration_seconds: three alters timed"
tap_is "$(delta dynconfd_request_duration_seconds_bucket "$A,le=+Inf")" 3 \
  "  all in the +Inf bucket"
tap_is "$(delta dynconfd_alters_total result=applied)" 1 "alters_total applied +1"
tap_is "$(delta dynconfd_alters_total result=refused)" 2 "alters_total refused +2"
tap_is "$(delta dynconfd_authorization_denials_total "")" 1 "authorization_denials_total +1"
tap_is "$(delta dynconfd_describe_answers_reused_total "")" 0 \
  "describe_answers_reused_total: none (each describe came on a connection of its own)"
tap_is "$(delta dynconfd_authentications_total "mechanism=SCRAM-SHA-256,result=success")" 1 \
  "authentications_total: one SCRAM-SHA-256 success"
tap_is "$(delta dynconfd_authentications_total "mechanism=SCRAM-SHA-256,result=failure")" 1 \
  "  and one failure"
tap_is "$(delta dynconfd_store_commit_seconds_count "")" 1 "one store commit timed"
tap_is "$(value "$DC_TMP/after" dynconfd_entities "")" 1 "entities: 1"
tap_is "$(value "$DC_TMP/after" dynconfd_overrides "")" 1 "overrides: 1"
tap_is "$(grep -c '^dynconfd_watches{} 0.0$' "$DC_TMP/after")" 1 \
  "watches: the gauge is there, none parked"
tap_is "$(grep -c '^dynconfd_watch_answers_total{reason=\(changed\|timeout\)} 0.0$' "$DC_TMP/after")" 2 \
  "  and the answers by reason, none yet"
tap_is "$(grep -c '^dynconfd_fleet_waits{} 0.0$' "$DC_TMP/after")" 1 \
  "fleet_waits: the gauge is there, no DescribeFleet parked"
tap_is "$(grep -c '^dynconfd_fleet_clients{state=\(up_to_date\|behind\|rejected\|silent\|restart_needed\)} 0.0$' "$DC_TMP/after")" 5 \
  "fleet: the gauge by state, no agent reported"
tap_like "$(grep '^dynconfd_requests_total{api=DescribeConfigs' "$DC_TMP/after")" \
  "error=NONE" "a describe counted"
tap_like "$(grep '^dynconfd_build_info{' "$DC_TMP/after")" \
  "version=[0-9]" "build_info names the version"
tap_like "$(grep '^dynconfd_connections{' "$DC_TMP/after")" \
  "listener=SASL_PLAINTEXT,protocol=SASL_PLAINTEXT" "connections by listener"
expiry=$(date -d "$(openssl x509 -enddate -noout -in "$CERTS/server.pem" | cut -d= -f2)" +%s)
tap_is "$(value "$DC_TMP/after" dynconfd_tls_certificate_expiry_seconds listener=SSL | cut -d. -f1)" \
  "$expiry" "tls_certificate_expiry_seconds{listener=SSL}: the served certificate's notAfter"
tap_is "$(grep -c '^dynconfd_tls_certificate_expiry_seconds{' "$DC_TMP/after")" 1 \
  "  only for the TLS listener"
tap_is "$(awk '$1 ~ /^process_(open_fds|resident_memory_bytes)\{/ && $2 > 0 { n++ } END { print n + 0 }' "$DC_TMP/after")" 2 \
  "process_open_fds and process_resident_memory_bytes are there and positive"

# The same DescribeConfigs three times on one connection: the second and
# third are the connection's kept answer, the same bytes; an alter made
# meanwhile on another connection is seen at once by the fourth.
same_describe() { # prints "same1 same2 changed" as 0/1 flags
  /usr/bin/python3 - "$DC_PORT" "$DC_CONFIGS" <<'PY'
import socket, struct, subprocess, sys
port = int(sys.argv[1])
name = b"app"
body = struct.pack(">i", 1) + struct.pack(">bh", 9, len(name)) + name
body += struct.pack(">i", -1) + b"\x01"  # all keys, with synonyms
head = struct.pack(">hhih", 32, 1, 77, 5) + b"probe"
frame = head + body
s = socket.create_connection(("127.0.0.1", port), timeout=10)
def ask():
    s.sendall(struct.pack(">i", len(frame)) + frame)
    n = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
    return s.recv(n, socket.MSG_WAITALL)
a, b, c = ask(), ask(), ask()
subprocess.run([sys.argv[2], "--bootstrap-server", "127.0.0.1:%d" % port,
                "--entity-type", "clients", "--entity-name", "app", "--alter",
                "--add-config", "linger.ms=77"], check=True,
               stdout=subprocess.DEVNULL, timeout=30)
d = ask()
print(int(a == b), int(a == c), int(d != a and b"77" in d))
PY
}
scrape "$DC_TMP/before"
tap_is "$(same_describe)" "1 1 1" \
  "one connection: the same DescribeConfigs answered alike three times, an alter made meanwhile seen at once"
scrape "$DC_TMP/after"
tap_is "$(delta dynconfd_describe_answers_reused_total "")" 2 \
  "  the second and third were the connection's kept answer"

tap_is "$(http GET /healthz)" "200 ok" "/healthz: 200 ok"
tap_is "$(http GET /readyz)" "200 ready" "/readyz: 200 ready"
tap_like "$(http GET /nope)" "^404 " "another path: 404"
tap_like "$(http POST /metrics)" "^405 " "POST: 405"
dc_stop_daemon
tap_is $? 0 "dynconfd stops cleanly"
tap_done
