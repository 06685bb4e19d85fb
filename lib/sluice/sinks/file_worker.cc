// file_worker: the thread that writes batches handed over by worker_sinks
// (see worker_protocol.h), as fd_sink writes, or into a worker_target (a
// log_worker's rotated log, see log_file/log_worker.cc).
#include "sluice/sinks/file_worker.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/sinks/detail/open_file.h"
#include "sluice/sinks/detail/worker_thread.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {
namespace detail {

// The thread: every batch pushed, in handing order, then a sleep until the next.
void worker_thread::run() noexcept {
  for (;;) {
    worker_slot* fifo = take();
    if (fifo == nullptr) {
      if (target) [[unlikely]]
        target->idle(*this);
      const bool go_on = wait_for_work([this](std::uint32_t w) {
        if (target) [[unlikely]]
          return target->sleep(*this, w);
        sleep_on(word, w);
        return true;
      });
      if (!go_on) return;
      continue;
    }
    while (fifo) {
      worker_slot* n = fifo->next;  // once written, the slot is the producer's again
      write(*fifo);
      fifo = n;
    }
  }
}

void worker_thread::write(worker_slot& s) noexcept {
  begin_round(s);
  const std::size_t before = chunks.load(std::memory_order_relaxed);
  const std::size_t n = s.single ? 1 : s.batch.size();
  if (target) [[unlikely]] {
    s.error = target->write(*this, s);
  } else {
    if (s.single)
      out.start(s.chunk);
    else
      out.start(s.batch);
    s.error = out.write_all();
    s.landed = out.landed();
    syscalls.store(out.syscalls(), std::memory_order_relaxed);
    bytes.store(out.bytes_written(), std::memory_order_relaxed);
  }
  batches.store(batches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  chunks.store(before + (s.error ? s.landed : n), std::memory_order_relaxed);
  s.position = bytes.load(std::memory_order_relaxed);

  end_round(s);
}

}  // namespace detail

// ---- file_worker

file_worker::file_worker(int fd, bool close_fd)
    : core_(std::make_shared<detail::worker_thread>(fd)), fd_(fd), close_fd_(close_fd) {
  start();
}

// The target is the core's: closed with it if the thread cannot start.
file_worker::file_worker(std::unique_ptr<detail::worker_target> target)
    : core_(std::make_shared<detail::worker_thread>(-1)), fd_(-1), close_fd_(false) {
  core_->target = std::move(target);
  start();
}

void file_worker::start() {
  // The thread takes no signals: they stay with the program's own threads.
  // (SIGPIPE from its writes is handled by fd_writer.)
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    core_->thread = std::thread([core = core_.get()] {
      pthread_setname_np(pthread_self(), "sluice-worker");
      core->run();
    });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (close_fd_) ::close(fd_);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

file_worker::file_worker(const std::string& path, const file_options& options)
    : file_worker(detail::open_or_throw(detail::open_fd(path, options), path), true) {
  fsync_at_close_ = options.fsync_at_end;
}

file_worker::~file_worker() { close(); }

std::error_code file_worker::close() noexcept {
  if (closed_) return close_error_;
  closed_ = true;
  core_->stop();
  core_->thread.join();
  if (core_->target) return close_error_ = core_->target->close(*core_);
  if (fsync_at_close_ && detail::sys.fsync(fd_) != 0) close_error_ = {errno, std::system_category()};
  if (close_fd_ && detail::sys.close(fd_) != 0 && !close_error_) close_error_ = {errno, std::system_category()};
  return close_error_;
}

std::unique_ptr<worker_sink> file_worker::make_sink() {
  return std::unique_ptr<worker_sink>(new worker_sink(core_));
}

std::size_t file_worker::batches() const noexcept { return core_->batches.load(std::memory_order_relaxed); }
std::size_t file_worker::syscalls() const noexcept { return core_->syscalls.load(std::memory_order_relaxed); }
std::size_t file_worker::bytes_written() const noexcept { return core_->bytes.load(std::memory_order_relaxed); }
std::size_t file_worker::chunks_written() const noexcept { return core_->chunks.load(std::memory_order_relaxed); }

detail::worker_thread& file_worker::core() const noexcept { return *core_; }

}  // namespace sluice
