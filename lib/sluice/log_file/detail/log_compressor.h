// log_compressor: the background thread that compresses a log's rotated
// files (app.log.1 -> app.log.1.gz), so that rotation, on the writer's
// path, only renames. Owned by log_rotation.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sluice/log_file/log_options.h"

namespace sluice::detail {

/// Compresses each queued rotated file, crash-safely: into a temporary
/// (app.log.gz.tmp), synced, renamed to its place (app.log.N.gz, N where the
/// plain file is by then, since rotations go on meanwhile), the directory
/// synced, and only then the plain file removed. So a crash leaves the
/// plain file whole, or the compressed one whole beside it: the thread's
/// first job, recover(), finishes either case at the next start.
///
/// A queued file is known by its inode, not its name, and held open from
/// add() on, so that its inode cannot be reused by a newer file while it
/// waits. Every rename of the chain is excluded from the compressor's own,
/// in this process and in others writing the same log (chain_lock): a file
/// that left the chain meanwhile (past keep) is not compressed, or its
/// compressed file is dropped. The temporary is written under flock(2),
/// so two processes' compressors take turns at it, and a temporary that no
/// one holds locked is a dead process's, which recover() removes.
///
/// A file that fails to compress stays plain, is reported through
/// options.on_compress_problem, counted, and tried again later (see
/// log_options::compress).
class log_compressor {
 public:
  log_compressor(const std::string& path, unsigned keep, const log_options& options);
  /// Compresses what is queued, then stops (files waiting for a retry stay
  /// plain, for the next start).
  ~log_compressor();
  log_compressor(const log_compressor&) = delete;
  log_compressor& operator=(const log_compressor&) = delete;

  /// The exclusion of the chain's renames: this process's (a mutex) and
  /// other processes' (an OFD lock on a byte of the log that no one writes,
  /// F_OFD_SETLKW: unlike flock, which every write takes, rotations only
  /// take it, so the compressor is not starved by a busy writer). The
  /// writer's rotation takes it on its own fd (open on the file the path
  /// names, checked under its flock); the compressor on the file the path
  /// names, checked once locked.
  class chain_lock {
   public:
    /// The writer's: `log_fd` is open for writing on the log.
    chain_lock(log_compressor& c, int log_fd) noexcept;
    /// The compressor's: opens the path.
    explicit chain_lock(log_compressor& c) noexcept;
    ~chain_lock();
    chain_lock(const chain_lock&) = delete;
    chain_lock& operator=(const chain_lock&) = delete;

   private:
    std::unique_lock<std::mutex> mutex_;
    int fd_ = -1;     // locked
    bool own_ = false;  // fd_ is ours to close
  };

  /// Queues the file just renamed to `plain` (app.log.1). Call under a
  /// chain_lock. Its error when the file cannot be opened (it then stays
  /// plain).
  std::error_code add(const std::string& plain);
  /// Blocks until recover() is done, the queue empty and no file being
  /// compressed (files waiting for a retry are not waited for).
  void wait_idle();
  /// Files compressed; compressions that failed (each try); the last failure.
  std::size_t compressed() const;
  std::size_t failures() const;
  std::error_code last_error() const;

  const std::string& plain(std::size_t i) const noexcept { return plain_[i]; }
  const std::string& packed(std::size_t i) const noexcept { return packed_[i]; }

 private:
  struct job {
    int fd;  // open on the file, O_RDONLY
    dev_t dev;
    ino_t ino;
  };
  void run();
  void recover();
  void recover_pair(std::size_t i);
  std::error_code compress(const job& j, std::string& name, bool& packed);
  int find(dev_t dev, ino_t ino) const noexcept;  // the chain index of the file, or -1
  int find(const job& j) const noexcept { return find(j.dev, j.ino); }
  bool queued(dev_t dev, ino_t ino) const noexcept;  // under mutex_
  void push(const job& j);
  void tell(const std::string& file, std::error_code ec, bool bad_twin) noexcept;
  int open_temporary(std::error_code& ec) noexcept;

  std::string path_, tmp_, dir_;
  std::vector<std::string> plain_, packed_;  // app.log.N and app.log.N.gz, N = 1..keep
  log_options options_;
  std::mutex chain_mutex_;
  mutable std::mutex mutex_;  // the queues and the counters
  std::condition_variable wake_, idle_;
  std::deque<job> queue_;
  std::deque<job> retry_;  // failed, tried again at retry_at_
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::seconds backoff_{1};
  bool busy_ = true;  // until recover() is done
  bool stop_ = false;
  std::size_t compressed_ = 0, failures_ = 0;
  std::error_code last_error_;
  std::thread thread_;
};

}  // namespace sluice::detail
