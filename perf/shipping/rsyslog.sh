# rsyslog.sh: sourced by receive-compare.sh and send-compare.sh. Starts
# rsyslogd (imptcp on a free loopback port -> omfile, no system service) and
# stops it when the script exits. Needs $tmp, $rsyslogd; sets server_pid.

server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# rsyslogd 8.2302 may send SIGTERM to the process that started it.
trap '' TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# rsyslog_conf DIR PORT OUT TUNED: writes DIR/rsyslog.conf. Each message is
# written as received ("%rawmsg%\n"). TUNED=1: omfile ioBufferSize="256k"
# and the main queue dequeuing batches of 1024; else rsyslog's defaults.
rsyslog_conf() {
  local dir=$1 port=$2 out=$3 tuned=$4
  {
    echo "global(workDirectory=\"$dir\" parser.escapeControlCharactersOnReceive=\"off\")"
    [ "$tuned" = 1 ] && echo 'main_queue(queue.dequeueBatchSize="1024")'
    echo 'module(load="imptcp")'
    echo 'template(name="raw" type="string" string="%rawmsg%\n")'
    if [ "$tuned" = 1 ]; then
      echo "ruleset(name=\"r\") { action(type=\"omfile\" file=\"$out\" template=\"raw\" ioBufferSize=\"256k\") }"
    else
      echo "ruleset(name=\"r\") { action(type=\"omfile\" file=\"$out\" template=\"raw\") }"
    fi
    echo "input(type=\"imptcp\" address=\"127.0.0.1\" port=\"$port\" ruleset=\"r\")"
  } >"$dir/rsyslog.conf"
}

# start_rsyslog DIR OUT TUNED: starts rsyslogd writing OUT, sets server_pid
# and port, and returns once it accepts connections (20 s at most).
start_rsyslog() {
  local dir=$1 out=$2 tuned=$3 i
  port=$(free_port)
  rsyslog_conf "$dir" "$port" "$out" "$tuned"
  setsid "$rsyslogd" -n -f "$dir/rsyslog.conf" -i "$dir/rsyslog.pid" 2>"$dir/err" &
  server_pid=$!
  for ((i = 0; i < 400; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "rsyslogd did not start:" >&2
  cat "$dir/err" >&2
  exit 1
}
