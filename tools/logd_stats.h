// sluice-logd's counts: the one table that --stats prints (its line, its
// JSON object) and --metrics serves (stat_table.h). The order is the
// line's.
#pragma once

#include <cstddef>

#include "stat_table.h"

namespace sluice_tools {

struct logd_counts {
  std::size_t messages, bytes, written, connections, malformed, rotations, reopens;
  std::size_t truncated, idle_closed, refused, accept_errors, space_waits, fsyncs, relp_answered, tls_refused;
  bool compress;  // --compress: its two counts are in the table
  std::size_t compressed, compress_failures;
  std::size_t open_connections, buffered_bytes;  // now: /metrics only
};

inline stat_table logd_stats(const logd_counts& n) {
  using enum metric_type;
  stat_table t = {
      {"messages", "# messages", "sluice_logd_messages_received_total",
       "Messages read from senders and handed to FILE (written plus not written).", counter, n.messages},
      {"bytes", ", # bytes", "sluice_logd_received_bytes_total", "The bytes of those messages.", counter, n.bytes},
      {"connections", ", # connections", "sluice_logd_connections_total", "Connections accepted.", counter,
       n.connections},
      {"malformed", ", # malformed", "sluice_logd_malformed_total",
       "Connections closed for a malformed frame or a RELP protocol error.", counter, n.malformed},
      {"rotations", ", # rotations", "sluice_logd_rotations_total", "Rotations of FILE (--max-size).", counter,
       n.rotations},
      {"reopens", ", # reopens", "sluice_logd_reopens_total", "Reopens of FILE (SIGHUP).", counter, n.reopens},
      {"written", "; # written", "sluice_logd_messages_written_total", "Messages written to FILE.", counter,
       n.written},
      // Not a counter: a message counts here from its read until its write
      // is done, so the value also goes down.
      {"not_written", ", # not written", "sluice_logd_messages_not_written",
       "Messages read and not written to FILE: on their way to it, or failed.", gauge, n.messages - n.written},
      {"truncated", "; # truncated", "sluice_logd_messages_truncated_total",
       "Messages longer than --max-message, written cut to it.", counter, n.truncated},
      {"idle_closed", ", # idle closed", "sluice_logd_idle_closed_total",
       "Connections closed by --idle-timeout.", counter, n.idle_closed},
      {"refused", ", # refused", "sluice_logd_connections_refused_total",
       "Connections closed at once past --max-connections.", counter, n.refused},
      {"accept_errors", ", # accept errors", "sluice_logd_accept_errors_total",
       "Accept errors (out of file descriptors or memory, or a listener that fails).", counter, n.accept_errors},
      {"space_waits", ", # waits for space", "sluice_logd_space_waits_total",
       "Times a write began to wait for room on FILE's disk (--on-full wait).", counter, n.space_waits},
      {"fsyncs", "; # fsyncs", "sluice_logd_fsyncs_total", "fsync(2) calls on FILE.", counter, n.fsyncs},
      {"relp_answered", ", # RELP answered", "sluice_logd_relp_answered_total",
       "RELP messages answered 200 (written as --fsync has it).", counter, n.relp_answered},
      {"tls_refused", ", # TLS refused", "sluice_logd_tls_refused_total",
       "--listen-tls handshakes that failed.", counter, n.tls_refused},
  };
  if (n.compress) {
    t.push_back({"compressed", "; # compressed", "sluice_logd_compressed_files_total",
                 "Rotated files compressed (--compress).", counter, n.compressed});
    t.push_back({"compress_failures", ", # failed compressions", "sluice_logd_compress_failures_total",
                 "Tries to compress a rotated file that failed.", counter, n.compress_failures});
  }
  t.push_back({nullptr, nullptr, "sluice_logd_open_connections", "Sender connections open now.", gauge,
               n.open_connections});
  t.push_back({nullptr, nullptr, "sluice_logd_buffered_bytes",
               "Bytes of messages read and waiting for FILE's worker thread now.", gauge, n.buffered_bytes});
  return t;
}

}  // namespace sluice_tools
