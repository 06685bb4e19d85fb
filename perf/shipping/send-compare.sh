#!/usr/bin/env bash
# send-compare.sh: issue 12's sending benchmark. MESSAGES RFC 5424 messages
# through sluice's syslog writable, a bare writev() loop of the same frames
# and spdlog's tcp_sink (perf/shipping/syslog_send_bench), alternated run by
# run, into two receivers one after the other:
#   drain    a process that reads and discards (the senders' own ceiling);
#   rsyslog  rsyslogd, imptcp -> omfile with a "%rawmsg%\n" template and
#            receive-compare.sh's tuned settings (ioBufferSize 256k, main
#            queue batches of 1024); a run ends when its file holds every
#            message's line. rsyslog is the slower side here: its figures
#            say what rsyslog takes, and the ratios tell little about the
#            senders, only that none of them holds rsyslog back.
# Each: messages per second and the sender's CPU time per message, with
# ratios against writev and spdlog.
#
#   perf/shipping/send-compare.sh [BUILDDIR]        (default: build)
#
# Environment: MESSAGES (default 1000000), SIZE (message body, default 64:
# 125-byte messages), RUNS (best of, default 3), RSYSLOGD (default
# /usr/sbin/rsyslogd).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
messages=${MESSAGES:-1000000}
size=${SIZE:-64}
runs=${RUNS:-3}
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
bench=$build/perf/syslog_send_bench
[ -x "$bench" ] || { echo "send-compare: $bench not built (meson setup with -Dperf=true; needs libspdlog-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
# shellcheck source=rsyslog.sh
. "$here/rsyslog.sh"

echo "send-compare: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bench" --messages "$messages" --size "$size" --runs "$runs"

if [ ! -x "$rsyslogd" ]; then
  echo "send-compare: $rsyslogd not found, rsyslog skipped" >&2
  exit 0
fi
start_rsyslog "$tmp" "$tmp/out.log" 1
echo
"$bench" --messages "$messages" --size "$size" --runs "$runs" --port "$port" --file "$tmp/out.log"
