// crash_handler: what the rings hold, with write(2) (write_fully()), at a
// fatal signal (crash_handler.h). Nothing here allocates or locks: fmt::format_to_n into
// a buffer on the stack, for the built-in types the records hold.
#include "sluice/logger/detail/crash_handler.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <csignal>
#include <mutex>
#include <span>

#include "sluice/logger/detail/arg_codec.h"
#include "sluice/logger/detail/clock.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {

namespace {

constexpr int crash_signals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE};
constexpr std::size_t max_crash_loggers = 16;
std::atomic<logger::state*> crash_loggers[max_crash_loggers];
std::once_flag crash_installed;
std::atomic<bool> crash_written{false};

void crash_write_queue(const logger::state& s, const log_queue& q, int fd) noexcept {
  log_buffer* b = q.crash_buf.load(std::memory_order_acquire);
  if (!b) return;
  std::uint64_t pos = b->head.load(std::memory_order_acquire);
  char line[4096];
  while (b) {
    const std::uint64_t tail = b->tail.load(std::memory_order_acquire);
    while (pos < tail) {
      const std::size_t off = pos & b->mask;
      const auto* r = reinterpret_cast<const log_record*>(b->data + off);
      if (r->size == 0) {
        pos += b->capacity - off;
        continue;
      }
      if (r->site == &log_backtrace_marker) {  // flush_backtrace(): no line of its own
        pos += r->size;
        continue;
      }
      if (r->dropped) {
        const std::size_t n =
            fmt::format_to_n(line, sizeof line, fmt::runtime(log_drop_format), r->dropped).size;
        (void)write_fully(fd, line, std::min(n, sizeof line));
      }
      std::size_t at = 0;
      if (r->timestamp) at = format_stamp(line, s.stamp_ns(r->timestamp), s.precise_stamps());
      // A SLUICE_LOG_* line: its level before it and a newline after it
      // (the pattern is the backend's: formatting it here could allocate).
      if (r->site) {
        const std::string_view level = log_level_name(r->site->level);
        std::memcpy(line + at, level.data(), level.size());
        at += level.size();
        line[at++] = ' ';
      }
      log_output out;
      out.buf = line + at;
      out.capacity = sizeof line - at - 1;  // room for the newline
      try {
        r->decode(reinterpret_cast<const std::byte*>(r + 1), r->format, r->format_size, out);
        std::size_t n = at + std::min(out.size, out.capacity);
        if (r->site) line[n++] = '\n';
        (void)write_fully(fd, line, n);
      } catch (...) {
      }
      pos += r->size;
    }
    b = b->next.load(std::memory_order_acquire);
    pos = 0;
  }
}

void on_crash(int signo) noexcept {
  const int saved_errno = errno;
  // Once: a fault that comes back (the instruction runs again, or a
  // sanitizer's handler calls this one again) or a second thread's crash
  // must not write the lines twice.
  for (auto& slot : crash_written.exchange(true) ? std::span<std::atomic<logger::state*>>() : std::span(crash_loggers)) {
    const logger::state* s = slot.load(std::memory_order_acquire);
    if (!s) continue;
    int fd = s->options.crash_fd;
    bool opened = false;
    if (!s->options.crash_path.empty()) {
      fd = ::open(s->options.crash_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      opened = fd >= 0;
    }
    if (fd < 0) continue;
    for (const log_queue* q = s->queues.load(std::memory_order_acquire); q; q = q->next_queue)
      crash_write_queue(*s, *q, fd);
    if (opened) ::close(fd);
  }
  errno = saved_errno;
  // SA_RESETHAND gave the signal its default action back: raised again, it
  // is delivered once this handler returns (a fault would come back anyway).
  ::signal(signo, SIG_DFL);
  ::raise(signo);
}

}  // namespace

void add_crash_logger(logger::state& s) {
  for (std::size_t i = 0; i < max_crash_loggers; ++i) {
    logger::state* expected = nullptr;
    if (crash_loggers[i].compare_exchange_strong(expected, &s)) break;
  }
  std::call_once(crash_installed, [] {
    for (int signo : crash_signals) {
      struct sigaction sa {};
      sa.sa_handler = [](int n) { on_crash(n); };
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      ::sigaction(signo, &sa, nullptr);
    }
  });
}

void remove_crash_logger(logger::state& s) noexcept {
  for (auto& slot : crash_loggers) {
    logger::state* expected = &s;
    slot.compare_exchange_strong(expected, nullptr);
  }
}

}  // namespace sluice::detail
