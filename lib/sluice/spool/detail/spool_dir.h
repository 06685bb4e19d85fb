// spool_dir: the directory a spool_writable keeps its segments in, opened
// with the checks that make it safe to read back what is found there, held
// by one spool at a time, and its one small file besides the segments: the
// position up to which the receiver acknowledged.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace sluice::detail {

/// Where the receiver's acknowledgements had reached: every record of
/// segment `seq` before byte `offset`, and every earlier segment.
struct spool_position {
  std::uint64_t seq = 0;
  std::uint64_t offset = 0;
};

class spool_dir {
 public:
  spool_dir() = default;
  ~spool_dir();
  spool_dir(const spool_dir&) = delete;
  spool_dir& operator=(const spool_dir&) = delete;

  /// Opens DIR, making it (mode 0700) if it does not exist (its parent
  /// must). Refused, with an error that says why (user_error), or the
  /// errno of a failed call: a symbolic link, not a directory, owned by
  /// another user, writable by group or others, or held by another spool
  /// (a lock, flock, on DIR/lock, which the kernel releases when its
  /// process dies, even by SIGKILL).
  std::error_code open(const std::string& path);

  const std::string& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  /// The segments in DIR, oldest first: sequence number and size. A
  /// segment name that is not a regular file owned by this user is an error.
  struct found {
    std::uint64_t seq;
    std::uint64_t size;
  };
  std::error_code list(std::vector<found>& out) const;

  /// The position last saved (seq 0: none, or a file that does not check).
  spool_position read_position() const;
  /// Saves `p` (one pwrite of 24 bytes into DIR/position, not synced: a
  /// position older than the truth only means records sent again). It is
  /// never removed: it keeps the highest segment number DIR has used.
  std::error_code write_position(const spool_position& p);

  /// fsync of DIR itself, so that a new segment's name survives a power loss.
  std::error_code sync() const;

 private:
  std::string path_;
  int dir_fd_ = -1;
  int lock_fd_ = -1;
  int position_fd_ = -1;
};

}  // namespace sluice::detail
