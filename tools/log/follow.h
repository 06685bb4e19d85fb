// sluice-log --follow PATH: each PATH read as it grows, as `tail -F` does,
// through rotations, truncations and deletions, its lines handed to the
// destination one by one, and (with --state DIR) the position of each file
// saved once the destination has acknowledged the lines before it.
//
// A file is known by its device and inode, and, since a file system gives
// an inode again once its file is gone, by a fingerprint of its first bytes
// (follow_state.h). Each PATH has its current file (what PATH names now)
// and the files it named before that are still being read:
// - PATH names another file (a rotation by rename, logrotate's `create`):
//   the old file is read to its end, and closed once it has not grown for
//   rotate_wait (a program may write a last line before it reopens); the
//   new one is read from its start.
// - The current file is smaller than the position, or its first bytes
//   changed (a rotation by copy and truncate, logrotate's `copytruncate`):
//   it is read again from 0.
// - PATH is gone: its file is read to its end, and PATH waited for.
// Lines are taken in each file's order; the files of one PATH are read
// oldest first.
//
// Wake-ups: inotify on each PATH's directory (every event there starts
// one pass over every file), and a check every --poll-interval whatever
// inotify says, for file systems that send no events (NFS, FUSE) and for a
// rotated file moved to another directory.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "follow_state.h"
#include "rate_limited_note.h"
#include "sluice/sluice.h"
#include "stat_table.h"
#include "tool.h"

namespace sluice_tools {

struct follow_options {
  std::vector<std::string> paths;  // --follow, in order
  std::string state_dir;           // --state; empty: no resume
  std::chrono::milliseconds poll_interval{1000};
  std::size_t max_line_length = 1 << 20;
  // A rotated or deleted file is closed once it has not grown for this long.
  std::chrono::milliseconds rotate_wait{5000};
  // A last line without its newline is sent as it is once its file has not
  // grown for this long.
  std::chrono::milliseconds partial_wait{5000};
  // Positions are saved at most this often (and once at the end).
  std::chrono::milliseconds save_interval{200};
};

struct follow_counts {
  std::size_t files = 0;        // files opened
  std::size_t rotations = 0;    // PATH found naming another file, or none
  std::size_t truncations = 0;  // a file read again from 0
  std::size_t reread = 0;       // lines read again after a restart (sent before, not known acknowledged)
  std::size_t partial = 0;      // last lines sent without their newline
};

/// --follow PATH, checked as given: bad usage (exit 2) when it is empty,
/// holds a newline (the state file is one line a file), is given twice, or
/// names a directory, a FIFO, a device or a socket (a FIFO is read as
/// standard input). A PATH not there yet is waited for.
std::string check_follow_path(const tool& t, const char* arg, const std::vector<std::string>& seen);

/// A FILE DEST that is one of the followed files would read its own lines
/// back for ever: bad usage.
void check_not_followed(const tool& t, const std::string& dest, const std::vector<std::string>& paths);

class follower {
 public:
  /// Hands one line (without its newline) to the destination; the line's
  /// write callback must call acked(ticket, ok). False: backpressure, no
  /// more lines until resume().
  using write_fn = std::function<bool(std::string_view line, std::uint64_t ticket)>;
  /// The input cannot go on (a line longer than max_line_length): the run
  /// ends with this message.
  using fail_fn = std::function<void(const std::string& message)>;

  follower(const follow_options& o, write_fn write, fail_fn fail);
  ~follower();
  follower(const follower&) = delete;
  follower& operator=(const follower&) = delete;

  /// Opens the state DIR and the files, and starts following; false after
  /// saying why on standard error.
  bool start();
  /// The destination drained: lines flow again.
  void resume();
  /// A line's write callback: the destination took it (ok) or gave it up.
  void acked(std::uint64_t ticket, bool ok);
  /// SIGTERM, SIGINT, or the end of the run: nothing more is read. A line
  /// read without its newline is not sent: the next run reads it again.
  void stop();
  /// The destination has finished: the last positions saved.
  void save_final();

  /// The follower's counts, as rows of sluice-log's one table
  /// (stat_table.h), after the destination's: so --stats prints one line
  /// (or one JSON object) and /metrics has them as sluice_log_follow_*.
  void add_stats(stat_table& t) const;
  /// --metrics only: gauges of what is now (files open, bytes behind the
  /// files' ends, the age of the last saved positions).
  void add_gauges(stat_table& t) const;

 private:
  struct file;
  struct watched;

  void schedule_pass();
  void pass();
  void check_path(watched& w);
  bool read_file(watched& w, file& f, std::size_t& budget);
  bool emit(file& f, std::string_view line, std::uint64_t end);
  bool too_long(const watched& w, std::uint64_t start);
  void retire(watched& w, std::unique_ptr<file> f);
  bool close_if_done(file& f);
  std::unique_ptr<file> open_file(const std::string& path, std::uint64_t offset, bool say);
  void restore(watched& w, const std::vector<follow_entry>& saved);
  int find_file(const watched& w, const follow_entry& e, bool by_fingerprint,
                const std::vector<std::pair<dev_t, ino_t>>& taken, struct stat& st);
  std::unique_ptr<file> adopt(int fd, const struct stat& st, std::uint64_t offset);
  void watch_dirs();
  void on_inotify();
  void arm_poll();
  void schedule_save();
  void save();
  void mark_read();
  void note(const std::string& what);

  const follow_options& o_;
  write_fn write_;
  fail_fn fail_;
  std::vector<std::unique_ptr<watched>> paths_;
  follow_state state_;
  bool have_state_ = false;
  // Lines handed to the destination, oldest first, until every line
  // before them is acknowledged too: a position saved is the end of a
  // line all of whose predecessors were acknowledged.
  struct pending {
    file* f;
    std::uint64_t end;
    bool done = false;
    bool ok = false;
  };
  std::vector<pending> pending_;  // from head_ on: not yet settled, or after one that is not
  std::size_t head_ = 0;
  std::uint64_t first_ticket_ = 0;  // pending_[head_]'s ticket
  bool gave_up_line_ = false;  // a line was given up: positions are not advanced past it
  int inotify_fd_ = -1;
  sluice::timer_id poll_timer_ = 0, save_timer_ = 0;
  bool pass_queued_ = false;
  bool waiting_ = false;   // the destination asked to wait for 'drain'
  bool stopped_ = false;
  bool in_pass_ = false;
  bool dirty_ = false;     // positions moved since the last save
  // The last save that reached the disk (the start until one has): the
  // age of what a restart would resume from, for --metrics.
  std::chrono::steady_clock::time_point saved_at_ = std::chrono::steady_clock::now();
  std::uint64_t next_id_ = 1;
  follow_counts n_;
  rate_limited_note state_note_, file_note_;
};

}  // namespace sluice_tools
