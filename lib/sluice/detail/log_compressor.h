// log_compressor: the background thread that compresses a log's rotated
// files (app.log.1 -> app.log.1.gz), so that rotation, on the writer's
// path, only renames. Owned by log_rotation.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sluice/sinks/log_options.h"

namespace sluice::detail {

/// Compresses each queued rotated file, crash-safely: into a temporary
/// (app.log.gz.tmp), synced, renamed to its place (app.log.N.gz, N where the
/// plain file is by then, since rotations go on meanwhile), the directory
/// synced, and only then the plain file removed. So a crash leaves the
/// plain file whole, or the compressed one whole beside it: recover()
/// finishes either case at the next start.
///
/// A queued file is known by its inode, not its name, and held open from
/// add() on, so that its inode cannot be reused by a newer file while it
/// waits; every rename of the chain (log_rotation::rotate() holds
/// chain_mutex()) is excluded from the compressor's own: a file that left
/// the chain meanwhile (past keep) is not compressed, or its compressed file
/// is dropped.
class log_compressor {
 public:
  log_compressor(const std::string& path, unsigned keep, const log_options& options);
  /// Compresses what is queued, then stops.
  ~log_compressor();
  log_compressor(const log_compressor&) = delete;
  log_compressor& operator=(const log_compressor&) = delete;

  /// Held by log_rotation::rotate() around its renames.
  std::mutex& chain_mutex() noexcept { return chain_mutex_; }
  /// Queues the file just renamed to `plain` (app.log.1). Call with
  /// chain_mutex() held. Its error when the file cannot be opened (it then
  /// stays plain).
  std::error_code add(const std::string& plain);
  /// At start, under chain_mutex(): removes a half-written temporary,
  /// removes a plain file whose compressed twin was renamed into place
  /// (the crash came before its removal), and queues the other plain ones.
  void recover();
  /// Blocks until the queue is empty and no file is being compressed.
  void wait_idle();
  /// Files compressed, and the last failure (the plain file then stays).
  std::size_t compressed() const;
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
  std::error_code compress(const job& j);
  int find(const job& j) const noexcept;  // the chain index of the file, or -1

  std::string path_, tmp_, dir_;
  std::vector<std::string> plain_, packed_;  // app.log.N and app.log.N.gz, N = 1..keep
  log_options options_;
  std::mutex chain_mutex_;
  mutable std::mutex mutex_;  // the queue and the counters
  std::condition_variable wake_, idle_;
  std::deque<job> queue_;
  bool busy_ = false, stop_ = false;
  std::size_t compressed_ = 0;
  std::error_code last_error_;
  std::thread thread_;
};

}  // namespace sluice::detail
