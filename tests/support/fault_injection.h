// fault_injector: makes the syscalls of sinks, sources and net::sockets (the
// table of sluice/base/detail/syscalls.h) fail at chosen or random points: EINTR, EAGAIN,
// short writes and reads (sendmsg and recv too), ENOSPC, EPIPE, ECONNRESET,
// EIO (on close and fsync too), a rename or an open that fails. One injector at a time; the table is restored when it
// goes. Thread-safe (a file_worker's thread calls it too).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "sluice/base/detail/syscalls.h"

namespace sluice::test {

enum class sys_call { writev, sendmsg, read, open, close, fsync, rename, unlink, ftruncate, recv, count_ };
enum class fault { none, eintr, eagain, short_io, enospc, epipe, eio, emfile, econnreset, count_ };

class fault_injector {
 public:
  explicit fault_injector(std::uint64_t seed = 0) : rng_(seed) {
    active() = this;
    detail::syscall_table t = detail::real_syscalls;
    t.writev = &hook_writev;
    t.sendmsg = &hook_sendmsg;
    t.read = &hook_read;
    t.open = &hook_open;
    t.close = &hook_close;
    t.fsync = &hook_fsync;
    t.rename = &hook_rename;
    t.unlink = &hook_unlink;
    t.ftruncate = &hook_ftruncate;
    t.recv = &hook_recv;
    saved_ = detail::swap_syscalls(t);
  }
  ~fault_injector() {
    detail::swap_syscalls(saved_);
    active() = nullptr;
  }
  fault_injector(const fault_injector&) = delete;
  fault_injector& operator=(const fault_injector&) = delete;

  /// Random faults: each call of `c` fails with probability `p`, with one of
  /// `faults` (drawn evenly).
  void set_rate(sys_call c, double p, std::vector<fault> faults) {
    std::lock_guard<std::mutex> g(m_);
    rules_[idx(c)] = {p, std::move(faults)};
  }
  /// A chosen point: call number `nth` (from 0, counted from now) of `c`
  /// fails with `f`.
  void fail_at(sys_call c, std::size_t nth, fault f) {
    std::lock_guard<std::mutex> g(m_);
    scripted_[{idx(c), calls_[idx(c)] + nth}] = f;
  }
  /// No more faults (the calls go on being counted).
  void stop() {
    std::lock_guard<std::mutex> g(m_);
    for (auto& r : rules_) r.p = 0;
    scripted_.clear();
  }

  /// Faults injected so far, of one kind or on one call.
  std::size_t injected(fault f) const {
    std::lock_guard<std::mutex> g(m_);
    return by_fault_[static_cast<std::size_t>(f)];
  }
  std::size_t injected(sys_call c, fault f) const {
    std::lock_guard<std::mutex> g(m_);
    return by_call_[idx(c)][static_cast<std::size_t>(f)];
  }
  std::size_t calls(sys_call c) const {
    std::lock_guard<std::mutex> g(m_);
    return calls_[idx(c)];
  }

 private:
  struct rule {
    double p = 0;
    std::vector<fault> faults;
  };
  static constexpr std::size_t ncalls = static_cast<std::size_t>(sys_call::count_);
  static constexpr std::size_t nfaults = static_cast<std::size_t>(fault::count_);
  static std::size_t idx(sys_call c) { return static_cast<std::size_t>(c); }

  static fault_injector*& active() {
    static fault_injector* a = nullptr;
    return a;
  }

  // What call `c` does this time; for a short one, how much of `size`.
  fault decide(sys_call c, std::size_t size = 0, std::size_t* part = nullptr) {
    std::lock_guard<std::mutex> g(m_);
    const std::size_t i = idx(c);
    const std::size_t n = calls_[i]++;
    fault f = fault::none;
    if (auto it = scripted_.find({i, n}); it != scripted_.end()) {
      f = it->second;
      scripted_.erase(it);
    } else if (rules_[i].p > 0 && !rules_[i].faults.empty() &&
               std::uniform_real_distribution<double>(0, 1)(rng_) < rules_[i].p) {
      f = rules_[i].faults[std::uniform_int_distribution<std::size_t>(0, rules_[i].faults.size() - 1)(rng_)];
    }
    if (f == fault::short_io) {
      if (size < 2) return fault::none;  // nothing to cut
      *part = std::uniform_int_distribution<std::size_t>(1, size - 1)(rng_);
    }
    if (f != fault::none) {
      ++by_fault_[static_cast<std::size_t>(f)];
      ++by_call_[i][static_cast<std::size_t>(f)];
    }
    return f;
  }

  static int errno_of(fault f) {
    switch (f) {
      case fault::eintr: return EINTR;
      case fault::eagain: return EAGAIN;
      case fault::enospc: return ENOSPC;
      case fault::epipe: return EPIPE;
      case fault::emfile: return EMFILE;
      case fault::econnreset: return ECONNRESET;
      default: return EIO;
    }
  }
  template <class T>
  static T fail(fault f) {
    errno = errno_of(f);
    return static_cast<T>(-1);
  }

  // writev and sendmsg: a short write writes the first `part` bytes for real.
  static ssize_t short_writev(int fd, const iovec* iov, int count, std::size_t part) {
    std::vector<iovec> cut;
    for (int k = 0; k < count && part > 0; ++k) {
      const std::size_t n = std::min(part, iov[k].iov_len);
      cut.push_back({iov[k].iov_base, n});
      part -= n;
    }
    return detail::real_syscalls.writev(fd, cut.data(), static_cast<int>(cut.size()));
  }
  static std::size_t total(const iovec* iov, int count) {
    std::size_t t = 0;
    for (int k = 0; k < count; ++k) t += iov[k].iov_len;
    return t;
  }
  static ssize_t hook_writev(int fd, const iovec* iov, int count) {
    std::size_t part = 0;
    const fault f = active()->decide(sys_call::writev, total(iov, count), &part);
    if (f == fault::none) return detail::real_syscalls.writev(fd, iov, count);
    if (f == fault::short_io) return short_writev(fd, iov, count, part);
    return fail<ssize_t>(f);
  }
  static ssize_t hook_sendmsg(int fd, const msghdr* msg, int flags) {
    std::size_t part = 0;
    const fault f = active()->decide(sys_call::sendmsg, total(msg->msg_iov, static_cast<int>(msg->msg_iovlen)), &part);
    if (f == fault::none) return detail::real_syscalls.sendmsg(fd, msg, flags);
    if (f == fault::short_io) {
      // sendmsg() itself, with its flags (MSG_NOSIGNAL), on the first `part` bytes.
      std::vector<iovec> cut;
      for (std::size_t k = 0; k < msg->msg_iovlen && part > 0; ++k) {
        const std::size_t n = std::min(part, msg->msg_iov[k].iov_len);
        cut.push_back({msg->msg_iov[k].iov_base, n});
        part -= n;
      }
      msghdr m = *msg;
      m.msg_iov = cut.data();
      m.msg_iovlen = cut.size();
      return detail::real_syscalls.sendmsg(fd, &m, flags);
    }
    return fail<ssize_t>(f);
  }
  static ssize_t hook_read(int fd, void* buf, size_t count) {
    std::size_t part = 0;
    const fault f = active()->decide(sys_call::read, count, &part);
    if (f == fault::none) return detail::real_syscalls.read(fd, buf, count);
    if (f == fault::short_io) return detail::real_syscalls.read(fd, buf, part);
    return fail<ssize_t>(f);
  }
  // A short recv reads the first `part` bytes for real; the rest stays in
  // the socket for the next call.
  static ssize_t hook_recv(int fd, void* buf, size_t count, int flags) {
    std::size_t part = 0;
    const fault f = active()->decide(sys_call::recv, count, &part);
    if (f == fault::none) return detail::real_syscalls.recv(fd, buf, count, flags);
    if (f == fault::short_io) return detail::real_syscalls.recv(fd, buf, part, flags);
    return fail<ssize_t>(f);
  }
  static int hook_open(const char* path, int flags, mode_t mode) {
    const fault f = active()->decide(sys_call::open);
    if (f == fault::none || f == fault::short_io) return detail::real_syscalls.open(path, flags, mode);
    return fail<int>(f);
  }
  // close() fails after closing, as Linux's does: the fd is gone either way.
  static int hook_close(int fd) {
    const fault f = active()->decide(sys_call::close);
    const int r = detail::real_syscalls.close(fd);
    if (f == fault::none || f == fault::short_io || r != 0) return r;
    return fail<int>(f);
  }
  // A sync that succeeds does nothing: the tests check what a file holds,
  // not that it would survive a power cut, and a real fsync costs them
  // milliseconds each.
  static int hook_fsync(int /*fd*/) {
    const fault f = active()->decide(sys_call::fsync);
    if (f == fault::none || f == fault::short_io) return 0;
    return fail<int>(f);
  }
  static int hook_rename(const char* from, const char* to) {
    const fault f = active()->decide(sys_call::rename);
    if (f == fault::none || f == fault::short_io) return detail::real_syscalls.rename(from, to);
    return fail<int>(f);
  }
  static int hook_unlink(const char* path) {
    const fault f = active()->decide(sys_call::unlink);
    if (f == fault::none || f == fault::short_io) return detail::real_syscalls.unlink(path);
    return fail<int>(f);
  }
  static int hook_ftruncate(int fd, off_t length) {
    const fault f = active()->decide(sys_call::ftruncate);
    if (f == fault::none || f == fault::short_io) return detail::real_syscalls.ftruncate(fd, length);
    return fail<int>(f);
  }

  mutable std::mutex m_;
  std::mt19937_64 rng_;
  std::array<rule, ncalls> rules_{};
  std::map<std::pair<std::size_t, std::size_t>, fault> scripted_;
  std::array<std::size_t, ncalls> calls_{};
  std::array<std::size_t, nfaults> by_fault_{};
  std::array<std::array<std::size_t, nfaults>, ncalls> by_call_{};
  detail::syscall_table saved_{};
};

}  // namespace sluice::test
