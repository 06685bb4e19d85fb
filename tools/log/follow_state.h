// sluice-log --follow's saved positions (--state DIR): for each followed
// file, where the lines the destination acknowledged end, so that a
// restart (also after SIGKILL) goes on from there.
//
// DIR holds three files: `lock` (flock: one sluice-log a DIR),
// `positions`, a text file replaced whole at each save (positions.tmp,
// written, fsynced, renamed over it, then DIR fsynced), so that a crash
// leaves either the old save or the new one, never a torn one, and `read`,
// how far each file was read, rewritten in place before each read's lines
// go (only to count what a restart reads again: see mark_read()). DIR is made
// 0700 and refused when it is a symbolic link, another user's, or writable
// by group or others; the files in it are opened with O_NOFOLLOW and made
// 0600, so that nobody else can point them at another file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice_tools {

/// What identifies a file beyond its inode, which the file system gives
/// again to a new file once the old one is gone: a hash (FNV-1a, 64 bits)
/// of its first `length` bytes, at most follow_fingerprint_max of them.
struct follow_fingerprint {
  std::uint32_t length = 0;
  std::uint64_t hash = 0;
  bool operator==(const follow_fingerprint&) const = default;
};
inline constexpr std::uint32_t follow_fingerprint_max = 256;

/// The fingerprint of the open file `fd`'s first min(size, max) bytes;
/// false when they cannot be read.
bool take_fingerprint(int fd, std::uint64_t size, follow_fingerprint& fp);

/// One followed file's saved state: which file (device, inode,
/// fingerprint), the end of the last line the destination acknowledged
/// (`offset`, where a restart reads from), and the end of the last line
/// handed to it (`sent`: what a restart reads again up to that point is
/// counted as re-read).
struct follow_entry {
  std::string path;  // the --follow PATH it was read for
  dev_t dev = 0;
  ino_t ino = 0;
  follow_fingerprint fp;
  std::uint64_t offset = 0;
  std::uint64_t sent = 0;
  bool current = false;  // PATH's file when saved, else a rotated one still read
};

class follow_state {
 public:
  follow_state() = default;
  follow_state(const follow_state&) = delete;
  follow_state& operator=(const follow_state&) = delete;
  ~follow_state();

  /// Makes or checks DIR and takes its lock; false with `why` when DIR
  /// cannot be used (the run ends: positions that cannot be kept safe are
  /// not kept at all).
  bool open(const std::string& dir, std::string& why);

  /// The entries of the last save. False with `why` when `positions`
  /// exists and cannot be read or parsed (the run then starts every file
  /// from its beginning: nothing is lost, some lines are sent again).
  bool load(std::vector<follow_entry>& entries, std::string& why) const;

  /// How far each file (device, inode, `sent`) was read, in `read`, in
  /// place and not synced: load() takes it as each entry's `sent` when it
  /// is further. Errors are ignored: it only counts.
  void mark_read(const std::vector<follow_entry>& marks);

  /// Replaces the saved entries, crash-safe; false with `why` (ENOSPC,
  /// EIO, EACCES) when the save did not happen: the last one stays.
  bool save(const std::vector<follow_entry>& entries, std::string& why);

  std::size_t saves() const noexcept { return saves_; }
  std::size_t failures() const noexcept { return failures_; }

 private:
  int dir_fd_ = -1;
  int lock_fd_ = -1;
  int read_fd_ = -1;  // `read`; -1 when it could not be opened
  std::size_t read_len_ = SIZE_MAX;  // its length as last written (unknown at first: truncated then)
  std::size_t saves_ = 0;
  std::size_t failures_ = 0;
};

}  // namespace sluice_tools
