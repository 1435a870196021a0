#!/bin/sh
# clickhouse.sh start DIR | stop DIR: a private ClickHouse server for the
# push and fleet-query tests (issue 32, docs/fleet.md): bound to 127.0.0.1
# on a free HTTP port, its data, logs and config under DIR, users
# "default" (no password) and "cudaspy" (password "secret"). start prints
# the HTTP URL once the server answers, or exits 77 saying why (no
# clickhouse-server installed, it did not come up): the tests skip then.
set -u
cmd=${1:?usage: clickhouse.sh start|stop DIR} dir=${2:?usage: clickhouse.sh start|stop DIR}
server=$(command -v clickhouse-server || command -v clickhouse) ||
    { echo "clickhouse.sh: no clickhouse-server installed (scripts/install-deps.sh)" >&2; exit 77; }
if [ "$cmd" = stop ]; then
    [ -f "$dir/pid" ] && kill "$(cat "$dir/pid")" 2>/dev/null
    for _ in $(seq 100); do [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null || exit 0; sleep 0.1; done
    kill -9 "$(cat "$dir/pid")" 2>/dev/null
    sleep 0.2
    exit 0
fi
mkdir -p "$dir/data/" "$dir/tmp/" "$dir/log" || exit 1
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tcp=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/log/server.log</log>
    <errorlog>$dir/log/server.err.log</errorlog><size>10M</size><count>2</count></logger>
  <http_port>$port</http_port>
  <tcp_port>$tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
</yandex>
XML
cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <cudaspy><password>secret</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></cudaspy>
  </users>
  <quotas><default></default></quotas>
</yandex>
XML
"$server" --config-file="$dir/config.xml" >"$dir/log/stdout" 2>&1 &
echo $! >"$dir/pid"
for _ in $(seq 300); do
    if curl -sf "http://127.0.0.1:$port/ping" >/dev/null 2>&1; then
        echo "http://127.0.0.1:$port"
        exit 0
    fi
    kill -0 $! 2>/dev/null || break
    sleep 0.1
done
echo "clickhouse.sh: the server did not answer on 127.0.0.1:$port: $(tail -3 "$dir/log/server.err.log" "$dir/log/stdout" 2>/dev/null | tr '\n' ' ')" >&2
kill $! 2>/dev/null
exit 77
