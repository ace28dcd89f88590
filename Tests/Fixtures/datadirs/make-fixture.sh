#!/usr/bin/env bash
# Makes one upgrade fixture (README.md): runs the hub binary HUB, built from an earlier commit, on the
# demo household as a person would, and keeps what it left and what it said of it.
#
#   unshare -n bash -c 'ip link set lo up && exec Tests/Fixtures/datadirs/make-fixture.sh HUB NAME COMMIT WORK'
#
# HUB     the old build's `hub` (debug is fine)
# NAME    the fixture's name, <short commit>-<what> (e.g. 0e164a5p-hublog01)
# COMMIT  the commit HUB was built from (short hash), written into NAME.formats.json
# WORK    a scratch directory (left behind: the broker's and the hub's logs, what exec answered)
#
# `unshare -n` (as root) gives the run a loopback of its own: the demo's simulated plugs listen on
# fixed ports (23001, 23002, 29999), which a demo hub elsewhere on the machine may hold. Without it
# the script waits until they are free.
#
# Writes NAME.tar.gz (the data directory as HUB left it, as data/), NAME.replay.json (HUB's `hub
# replay --json`), NAME.verify.txt (HUB's `hub verify`), NAME.head.json (the last line of HUB's `hub
# export -`) and NAME.formats.json (what the data directory's files are) beside this script.
set -euo pipefail
HUB=$1
NAME=$2
COMMIT=$3
WORK=$4
RUN_SECONDS=${RUN_SECONDS:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
mkdir -p "$WORK"
D=$WORK/data
[ ! -e "$D" ] || { echo "make-fixture: $D exists" >&2; exit 1; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
MQTT_PORT=$(free_port)
HTTP_PORT=$(free_port)

# A development broker (deploy/mosquitto-dev.conf) on a free port.
sed "s/^listener 1883 127.0.0.1/listener $MQTT_PORT 127.0.0.1/" "$ROOT/deploy/mosquitto-dev.conf" > "$WORK/mosquitto.conf"
mosquitto -c "$WORK/mosquitto.conf" > "$WORK/mosquitto.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null || true' EXIT
sleep 1

# The demo's simulated plugs listen on fixed ports: wait while another demo hub holds them.
while ss -ltn | grep -qE '127.0.0.1:(23001|23002|29999)\b'; do sleep 5; done

"$HUB" run --data-dir "$D" --demo --mqtt-port "$MQTT_PORT" --http "127.0.0.1:$HTTP_PORT" > "$WORK/run.log" 2>&1 &
HUBPID=$!
for _ in $(seq 120); do grep -q "Ctrl-C stops." "$WORK/run.log" && break; sleep 0.5; done
grep -q "Ctrl-C stops." "$WORK/run.log"
sleep 8
pub() { mosquitto_pub -p "$MQTT_PORT" -q 1 -t "$1" -m "$2"; sleep 0.5; }
START=$(date -u -d '+2 minutes' +%Y-%m-%dT%H:%M:00Z)
# Commands over MQTT, as Home Assistant or a script sends them (docs/mqtt.md).
pub hub/device/demo-heater/switch/set ON
pub hub/request/switch '{"device":"demo-kettle","state":"OFF","command_id":"fx-kettle-off"}'
pub hub/device/demo-heater/activations/set "{\"op\":\"add\",\"name\":\"evening\",\"start\":\"$START\",\"length\":30,\"period\":1440,\"id\":\"fx-act-1\"}"
pub hub/request/group/define '{"id":"patio","name":"Patio","members":["demo-heater","demo-kettle"],"command_id":"fx-group-1"}'
pub hub/group/patio/switch/set '{"state":"OFF","id":"fx-group-off"}'
pub hub/request/scene/define '{"id":"evening","name":"Evening","states":{"demo-heater":"ON","demo-kettle":"OFF"},"command_id":"fx-scene-1"}'
pub hub/request/scene/apply '{"id":"evening","command_id":"fx-scene-apply"}'
pub hub/animal/admit '{"id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1DE4B189115E45F6B44E5093522699A1","owner_name":"Ana Example","owner_phone":"+34 600 000 000","owner_address":"Calle Falsa 1","command_id":"fx-adm-rex"}'
pub hub/animal/rex/vitals '{"heart_rate":92,"temperature":"38.6","command_id":"fx-v-1"}'
pub hub/request/command '{"command":"record_reading","animal":"rex","quantity":"heart_rate","value":95}'
# One over the HTTP API (docs/http.md; loopback needs no token).
curl -s -X POST "http://127.0.0.1:$HTTP_PORT/api/command" -H 'Content-Type: application/json' \
  -d '{"command":"rename_device","id":"demo-pump","name":"Lawn pump (renamed)"}' > "$WORK/http.txt" || true
sleep "$RUN_SECONDS"
pub hub/request/animal/erase-owner '{"id":"rex","command_id":"fx-erase-rex"}'
pub hub/device/demo-heater/switch/set OFF
sleep 3
kill -TERM "$HUBPID"
wait "$HUBPID" || true

# What the demo lacks, with the hub stopped (docs/events.md, Commands).
"$HUB" exec --data-dir "$D" - > "$WORK/exec.log" 2>&1 <<EOF || true
{"command":"admit_animal","id":"mia","name":"Mia","species":"cat","weight_kg":4.2,"beacon":"2B5E6A0C9D3F4E1A8B7C6D5E4F3A2B1C","gender":"female","breed":"tabby","owner_name":"Luis Owner","owner_address":"Rua Nova 7","owner_phone":"+351 910 000 000","motive":"check-up","command_id":"fx-adm-mia"}
{"command":"record_reading","animal":"mia","quantity":"heart_rate","value":140}
{"command":"record_reading","animal":"mia","quantity":"temperature","value":38.9}
{"command":"define_group","id":"indoors","name":"Indoors","members":["demo-kettle","demo-pump"],"command_id":"fx-group-2"}
{"command":"set_activation","device":"demo-kettle","op":"add","name":"morning","start":"$START","length":15,"period":1440,"command_id":"fx-act-2"}
{"command":"switch","id":"demo-pump","state":"ON","command_id":"fx-pump-on"}
{"command":"erase_owner_data","id":"mia","command_id":"fx-erase-mia"}
{"command":"discharge_animal","id":"rex","exit_weight_kg":24.1,"veterinarian":"Dr. Vega"}
EOF

# The data directory as the build left it, kept before anything else reads it (sparse files stay sparse).
mkdir -p "$WORK/pack"
cp -a "$D" "$WORK/pack/data"
tar --sparse --sort=name --owner=0 --group=0 --numeric-owner -C "$WORK/pack" -czf "$HERE/$NAME.tar.gz" data

# What this same build says of it.
"$HUB" replay --data-dir "$D" --json > "$HERE/$NAME.replay.json"
"$HUB" verify --data-dir "$D" > "$HERE/$NAME.verify.txt"
"$HUB" export --data-dir "$D" - | tail -n 1 > "$HERE/$NAME.head.json"

# What its files are: the first segment's magic, the history files' format, the newest snapshot's format.
magic=$(head -c 8 "$(ls "$D"/log/*.seg | head -n 1)")
history=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("version", 1))' "$D/history/synced")
snapshot=$(grep -ao '"format":[0-9]*' "$(ls "$D"/snapshots/snapshot-*.snap | tail -n 1)" | head -n 1 | cut -d: -f2)
audit=false
[ -e "$D/audit/tree" ] && audit=true
printf '{"commit":"%s","segment_magic":"%s","history_format":%s,"snapshot_format":%s,"audit_tree":%s}\n' \
  "$COMMIT" "$magic" "$history" "$snapshot" "$audit" > "$HERE/$NAME.formats.json"
cat "$HERE/$NAME.formats.json"
