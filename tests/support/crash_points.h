// crash_points: the syscall table (sluice/base/detail/syscalls.h) swapped for one
// that counts every durable step under a directory (write, writev, pwrite,
// fsync, fdatasync, rename, unlink, ftruncate, mkdir, open with O_CREAT) and
// can end the process right before or right after step k, as a crash would.
//
// Two kinds of crash:
// - process: the process dies (_exit); what it wrote stays, as the page
//   cache keeps it.
// - power: the machine dies; the directory is first rolled back to what a
//   disk would hold. The model: a file's bytes are durable only as of its
//   last fsync or fdatasync (a file never synced comes back empty); the
//   names (create, rename, unlink, mkdir) are durable in order, up to the
//   last fsync of anything (a journal that commits every name change with
//   the next sync, as ext4 and XFS do): a rename or unlink after the last
//   sync is undone, a name created after it is gone. fsync itself does not
//   reach the disk (the model keeps what it would have kept), so a step
//   costs microseconds.
//
// One crash_model at a time, in a child process of the test; thread-safe
// (the log compressor's thread and a file_worker's make calls too): the
// steps are counted, and the crash made, under one lock, so no other
// thread changes the directory while it is rolled back.
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>

#include "sluice/base/detail/syscalls.h"

namespace sluice::test {

enum class crash_when { before, after };
enum class crash_kind { process, power };

/// The exit status of a child that crashed at its crash point.
inline constexpr int crashed_status = 99;

/// Where the child says at which step it crashed (in memory the parent
/// shares, so that it survives the _exit).
struct crash_report {
  long steps = 0;        // durable steps made (all of them, when no crash came)
  bool crashed = false;
  char what[512] = {};   // "before rename(/d/app.log.1.gz.tmp, /d/app.log.1.gz)"
};

class crash_model {
 public:
  /// Counts the durable steps under `root` (an absolute path); with
  /// `crash_at` >= 0, crashes at that step (from 0), `when` and of `kind`.
  crash_model(std::string root, long crash_at, crash_when when, crash_kind kind, crash_report& report)
      : root_(std::move(root)), crash_at_(crash_at), when_(when), kind_(kind), report_(report) {
    active() = this;
    snapshot_names();
    // What is there at the start is on disk.
    for (auto& [rel, content] : durable_)
      if (content) *content = read_path(root_ + "/" + rel);
    for (auto& [rel, content] : durable_) {
      struct stat st {};
      if (content && ::lstat((root_ + "/" + rel).c_str(), &st) == 0) synced_[st.st_ino] = *content;
    }
    detail::syscall_table t = detail::real_syscalls;
    t.writev = &hook_writev;
    t.write = &hook_write;
    t.pwrite = &hook_pwrite;
    t.open = &hook_open;
    t.fsync = &hook_fsync;
    t.fdatasync = &hook_fdatasync;
    t.rename = &hook_rename;
    t.unlink = &hook_unlink;
    t.ftruncate = &hook_ftruncate;
    t.mkdir = &hook_mkdir;
    saved_ = detail::swap_syscalls(t);
  }
  ~crash_model() {
    detail::swap_syscalls(saved_);
    active() = nullptr;
  }
  crash_model(const crash_model&) = delete;
  crash_model& operator=(const crash_model&) = delete;

 private:
  static crash_model*& active() {
    static crash_model* a = nullptr;
    return a;
  }

  bool under_root(const std::string& p) const {
    return p.size() > root_.size() && p.compare(0, root_.size(), root_) == 0 && p[root_.size()] == '/';
  }
  static std::string fd_path(int fd) {
    char link[64], buf[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = ::readlink(link, buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
  static std::string read_path(const std::string& p) {
    std::string out;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
  }

  // The names under root now, each with the bytes its file had at its last
  // sync (nullopt: a directory).
  void snapshot_names() {
    durable_.clear();
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const std::string p = it->path().string();
      struct stat st {};
      if (::lstat(p.c_str(), &st) != 0) continue;
      const std::string rel = p.substr(root_.size() + 1);
      if (S_ISDIR(st.st_mode)) {
        durable_[rel] = std::nullopt;
      } else if (S_ISREG(st.st_mode)) {
        const auto s = synced_.find(st.st_ino);
        durable_[rel] = s != synced_.end() ? s->second : std::string();
      }
    }
  }

  // A sync of `fd`: its bytes (a regular file's) are on disk, and with them
  // every name change so far.
  void synced(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    if (S_ISREG(st.st_mode)) {
      char link[64];
      std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      synced_[st.st_ino] = read_path(link);
    }
    snapshot_names();
  }

  // The disk as the model says it holds after a power loss.
  void roll_back() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root_, ec)) std::filesystem::remove_all(e.path(), ec);
    for (const auto& [rel, content] : durable_) {  // sorted: a directory before what is in it
      const std::string p = root_ + "/" + rel;
      if (!content) {
        ::mkdir(p.c_str(), 0700);
        continue;
      }
      const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) continue;
      std::size_t off = 0;
      while (off < content->size()) {
        const ssize_t n = ::write(fd, content->data() + off, content->size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      ::close(fd);
    }
  }

  [[noreturn]] void crash(const char* when, const std::string& what) {
    if (kind_ == crash_kind::power) roll_back();
    std::snprintf(report_.what, sizeof report_.what, "%s %s", when, what.c_str());
    report_.crashed = true;
    report_.steps = step_;
    ::_exit(crashed_status);
  }

  // One durable step: counted, crashed at if it is the one, then made by
  // `real` (whose result is returned), `after` run on its result.
  template <class Real, class After>
  auto step(const std::string& what, Real real, After after) {
    std::lock_guard<std::mutex> g(m_);
    const long k = step_++;
    report_.steps = step_;
    if (k == crash_at_ && when_ == crash_when::before) crash("before", what);
    const auto r = real();
    const int saved = errno;
    after(r);
    if (k == crash_at_ && when_ == crash_when::after) crash("after", what);
    errno = saved;
    return r;
  }
  template <class Real>
  auto step(const std::string& what, Real real) {
    return step(what, real, [](auto) {});
  }

  static std::string name(const char* call, const std::string& a, const std::string& b = {}) {
    return std::string(call) + "(" + a + (b.empty() ? "" : ", " + b) + ")";
  }

  static ssize_t hook_writev(int fd, const iovec* iov, int count) {
    crash_model& m = *active();
    const std::string p = fd_path(fd);
    if (!m.under_root(p)) return detail::real_syscalls.writev(fd, iov, count);
    return m.step(name("writev", p), [&] { return detail::real_syscalls.writev(fd, iov, count); });
  }
  static ssize_t hook_write(int fd, const void* buf, size_t count) {
    crash_model& m = *active();
    const std::string p = fd_path(fd);
    if (!m.under_root(p)) return detail::real_syscalls.write(fd, buf, count);
    return m.step(name("write", p), [&] { return detail::real_syscalls.write(fd, buf, count); });
  }
  static ssize_t hook_pwrite(int fd, const void* buf, size_t count, off_t off) {
    crash_model& m = *active();
    const std::string p = fd_path(fd);
    if (!m.under_root(p)) return detail::real_syscalls.pwrite(fd, buf, count, off);
    return m.step(name("pwrite", p), [&] { return detail::real_syscalls.pwrite(fd, buf, count, off); });
  }
  static int hook_ftruncate(int fd, off_t length) {
    crash_model& m = *active();
    const std::string p = fd_path(fd);
    if (!m.under_root(p)) return detail::real_syscalls.ftruncate(fd, length);
    return m.step(name("ftruncate", p), [&] { return detail::real_syscalls.ftruncate(fd, length); });
  }
  // The sync is the model's: nothing is asked of the disk.
  static int sync_step(const char* call, int fd, int (*real)(int)) {
    crash_model& m = *active();
    const std::string p = fd_path(fd);
    if (!m.under_root(p) && p != m.root_) return real(fd);
    return m.step(name(call, p), [] { return 0; }, [&](int) { m.synced(fd); });
  }
  static int hook_fsync(int fd) { return sync_step("fsync", fd, detail::real_syscalls.fsync); }
  static int hook_fdatasync(int fd) { return sync_step("fdatasync", fd, detail::real_syscalls.fdatasync); }
  // An open that creates a file (the only kind that is a durable step)
  // begins a file of no synced bytes, whatever inode number it reuses.
  static int hook_open(const char* path, int flags, mode_t mode) {
    crash_model& m = *active();
    if (!(flags & O_CREAT) || !m.under_root(path)) return detail::real_syscalls.open(path, flags, mode);
    // Whether it existed is asked under the model's lock, with the open:
    // asked before, another thread's rename or create could come between
    // (the log compressor opens FILE for its lock while the writer rotates),
    // and a file that was there, with synced lines, be taken for a new one.
    bool existed = false;
    return m.step(name("open", path, "O_CREAT"),
                  [&] {
                    struct stat st {};
                    existed = ::lstat(path, &st) == 0;
                    return detail::real_syscalls.open(path, flags, mode);
                  },
                  [&](int fd) {
                    struct stat now {};
                    if (fd >= 0 && !existed && ::fstat(fd, &now) == 0) m.synced_.erase(now.st_ino);
                  });
  }
  static int hook_rename(const char* from, const char* to) {
    crash_model& m = *active();
    if (!m.under_root(from) && !m.under_root(to)) return detail::real_syscalls.rename(from, to);
    return m.step(name("rename", from, to), [&] { return detail::real_syscalls.rename(from, to); });
  }
  static int hook_unlink(const char* path) {
    crash_model& m = *active();
    if (!m.under_root(path)) return detail::real_syscalls.unlink(path);
    return m.step(name("unlink", path), [&] { return detail::real_syscalls.unlink(path); });
  }
  static int hook_mkdir(const char* path, mode_t mode) {
    crash_model& m = *active();
    if (!m.under_root(path)) return detail::real_syscalls.mkdir(path, mode);
    return m.step(name("mkdir", path), [&] { return detail::real_syscalls.mkdir(path, mode); });
  }

  std::string root_;
  long crash_at_;
  crash_when when_;
  crash_kind kind_;
  crash_report& report_;
  std::mutex m_;
  long step_ = 0;
  std::map<ino_t, std::string> synced_;                          // a file's bytes at its last sync
  std::map<std::string, std::optional<std::string>> durable_;  // the names at the last sync
  detail::syscall_table saved_{};
};

}  // namespace sluice::test
