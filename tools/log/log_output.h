// sluice-log's destination, as its main loop sees it: one writable to
// write the lines to, and what only the destination knows: how it opens,
// what it counts, what it says at the end. log_file_output.h writes a FILE;
// log_net_output.h sends to syslog:// (TCP or a Unix socket) or kafka://.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "pending_age.h"
#include "sluice/sluice.h"
#include "stat_table.h"

namespace sluice_tools {

// What became of the lines, each counted once, by its write's callback.
struct log_counts {
  std::size_t lines = 0;    // read and handed to the output
  std::size_t written = 0;  // of those, written or sent
  std::size_t unsent = 0;   // of those, refused or dropped
  pending_age age;          // of the oldest line not yet written or unsent (--metrics)
};

// How the run ended, for report().
struct log_end {
  bool finished = false;   // the stream's end() succeeded
  bool failed = false;     // the output's error is already reported
  bool ok_so_far = true;   // nothing has made the run's status 1 yet
  std::string reason;      // why messages were not sent
};

class log_output {
 public:
  virtual ~log_output() = default;

  /// Opens the destination and builds stream(); false after saying why on
  /// standard error (the run's status is then 1).
  virtual bool open() = 0;

  /// A network destination takes a line as one message, without its
  /// newline; after an error it gives up (what it holds is dropped, and
  /// counted); after a signal it has --grace to take what was read. A file
  /// that fails ends the run at once.
  virtual bool network() const noexcept = 0;

  /// SIGHUP: a file is reopened (after logrotate moved it); nothing else.
  virtual void reopen() {}

  /// After each line's callback: a note the destination owes, once.
  virtual void landed() {}

  /// Every callback has come (the loop ended): the last sync and close, and
  /// what did not land. Returns false when the run must exit 1.
  virtual bool report(const log_counts& n, const log_end& end) = 0;

  /// The destination's counts: the one table of --stats and --metrics
  /// (stat_table.h), in the order of the --stats line.
  virtual stat_table stats(const log_counts& n) const = 0;

  /// --metrics: stats() and what is now in the stream.
  stat_table metrics(const log_counts& n) const {
    stat_table t = stats(n);
    t.push_back({nullptr, nullptr, "sluice_log_buffered_bytes", "Bytes of lines waiting in the stream now.",
                 metric_type::gauge, out_ ? out_->writable_length() : 0});
    t.push_back({nullptr, nullptr, "sluice_log_oldest_pending_age_seconds",
                 "How long the oldest line read and not yet settled has waited, now (relp://: not acknowledged; "
                 "syslog://: not in the kernel; kafka://: not delivered; --spool: not in the spool; FILE: not "
                 "written); 0 when none waits.",
                 metric_type::gauge, 0, nullptr, {}, n.age.oldest_seconds(n.written + n.unsent, n.lines)});
    return t;
  }

  sluice::writable& stream() noexcept { return *out_; }

 protected:
  std::unique_ptr<sluice::writable> out_;
};

}  // namespace sluice_tools
