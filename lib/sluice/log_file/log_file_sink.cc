#include "sluice/log_file/log_file_sink.h"

#include <poll.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/log_file/detail/log_rotation.h"
#include "sluice/log_file/detail/log_writer.h"

namespace sluice {

log_file_sink::log_file_sink(std::unique_ptr<detail::log_rotation> file)
    : sink({.writev = true, .final = true, .coalesce = true}, this), log_(std::make_unique<detail::log_writer>(std::move(file))) {}

log_file_sink::log_file_sink(const std::string& path, const log_options& options)
    : log_file_sink(std::make_unique<detail::log_rotation>(path, options)) {}

std::unique_ptr<log_file_sink> log_file_sink::open(const std::string& path, const log_options& options,
                                                   std::error_code& ec) noexcept {
  const int fd = detail::log_rotation::open_fd(path, options.permissions);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  ec.clear();
  try {
    return std::unique_ptr<log_file_sink>(new log_file_sink(std::make_unique<detail::log_rotation>(fd, path, options)));
  } catch (const std::bad_alloc&) {  // log_rotation's constructor closed fd, or owns it by now
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
}

log_file_sink::~log_file_sink() {
  if (loop_) loop_->cancel(this);
}

const std::string& log_file_sink::path() const noexcept { return log_->file().path(); }
int log_file_sink::fd() const noexcept { return log_->file().fd(); }
std::uint64_t log_file_sink::size() const noexcept { return log_->file().size(); }
std::size_t log_file_sink::rotations() const noexcept { return log_->file().rotations(); }
std::size_t log_file_sink::reopens() const noexcept { return log_->file().reopens(); }
std::size_t log_file_sink::fsyncs() const noexcept { return log_->file().fsyncs(); }
std::uint64_t log_file_sink::bytes_written() const noexcept { return log_->file().bytes_written(); }

// ---- a write or writev

void log_file_sink::write(std::string_view chunk, write_done done) {
  done_.emplace(done);
  log_->begin_call();
  std::error_code ec = before_part();
  if (ec || (ec = log_->start(chunk))) return finish(ec);
  pump();
}

void log_file_sink::writev(const write_batch& batch, write_done done) {
  done_.emplace(done);
  log_->begin_call();
  std::error_code ec = before_part();
  if (ec || (ec = log_->start(batch))) return finish(ec);
  pump();
}

// What must happen before the next part of a call goes out (log_ then
// rotates if the part's first chunk would take a non-empty file past
// max_size): an error met between calls is this call's; then a reopen that
// was asked for.
std::error_code log_file_sink::before_part() noexcept {
  account();
  if (pending_) return std::exchange(pending_, {});
  if (log_->file().fd() < 0) return std::make_error_code(std::errc::bad_file_descriptor);
  if (reopen_asked_) {
    reopen_asked_ = false;
    if (const std::error_code ec = reopen_now()) return ec;
  }
  return {};
}

// The next part of a batch, after a rotation if needed.
std::error_code log_file_sink::start_part() noexcept {
  if (const std::error_code ec = before_part()) return ec;
  forget_fd();  // a part starts a new file
  return log_->start_part();
}

void log_file_sink::pump() noexcept {
  std::error_code ec;
  for (;;) {
    if (!log_->out().write_some(ec)) {
      account();
      loop_->watch(log_->file().fd(), POLLOUT, [this](short) { pump(); }, this);
      return;
    }
    if (ec || !log_->more()) break;
    if ((ec = start_part())) break;
  }
  finish(ec);
}

// Only a write that failed has landed chunks to tell of: an error met after
// the bytes (a sync) fails them all, since they may not stay.
void log_file_sink::finish(std::error_code ec) noexcept {
  account();
  const std::size_t landed = ec ? log_->landed() : 0;
  log_->end_call();
  after_call(ec);
  const write_done done = *done_;
  done_.reset();
  done(ec, landed);
}

// After a call, before its callback: an error met during it, the every_bytes
// sync, a reopen that waited for it, the every_ms timer.
void log_file_sink::after_call(std::error_code& ec) noexcept {
  if (closed_) return;
  if (!ec && pending_) ec = std::exchange(pending_, {});
  if (ec) return;
  const log_options& o = log_->file().options();
  if (o.fsync == log_options::fsync_policy::every_bytes && log_->file().unsynced() > 0 &&
      log_->file().unsynced() >= o.fsync_bytes) {
    if ((ec = sync())) return;
  }
  if (reopen_asked_) {
    reopen_asked_ = false;
    if ((ec = reopen_now())) return;
  }
  if (o.fsync == log_options::fsync_policy::every_ms && log_->file().unsynced() > 0 && timer_ == 0 && loop_)
    timer_ = loop_->set_timeout(o.fsync_interval, [this] { on_timer(); }, this);
}

// Counts what log_ has written since last asked.
void log_file_sink::account() noexcept {
  log_->account();
  syscalls_ += log_->out().syscalls() - syscalls_seen_;
  syscalls_seen_ = log_->out().syscalls();
}

// ---- reopen, sync

std::error_code log_file_sink::reopen() noexcept {
  if (closed_) return {};
  if (done_) {
    reopen_asked_ = true;
    return {};
  }
  const std::error_code ec = reopen_now();
  if (ec) report(ec);
  return ec;
}

std::error_code log_file_sink::reopen_now() noexcept {
  account();
  forget_fd();
  return log_->reopen();
}

// Before the file is closed (or reopened): a pipe or a FIFO was watched
// for POLLOUT, and a host loop may still hold its number (loop::forget_fd()).
void log_file_sink::forget_fd() noexcept {
  if (loop_ && log_->file().fd() >= 0) loop_->forget_fd(log_->file().fd());
}

std::error_code log_file_sink::sync() noexcept { return log_->file().sync(); }

void log_file_sink::on_timer() noexcept {
  timer_ = 0;
  if (closed_) return;
  account();
  if (log_->file().unsynced() == 0) return;
  if (const std::error_code ec = sync()) report(ec);
}

// An error met outside the sink's calls: the call in flight reports it, or
// the stream is destroyed with it, or the next call reports it.
void log_file_sink::report(std::error_code ec) noexcept {
  if (!done_ && report_to_stream_) {
    report_error(ec);
    return;
  }
  if (!pending_) pending_ = ec;
}

// ---- end and destroy

// The file is complete: sync it (unless the policy is never), then close it,
// so that the errors of both reach end()'s callback.
void log_file_sink::final(final_done done) {
  if (timer_ != 0) loop_->clear_timeout(std::exchange(timer_, 0));
  account();
  std::error_code ec = std::exchange(pending_, {});
  if (!ec) ec = log_->file().sync_if_dirty();
  closed_ = true;
  forget_fd();
  const std::error_code closed = log_->file().close();
  done(ec ? ec : closed);
}

void log_file_sink::destroy(std::error_code err, destroy_done done) noexcept {
  closed_ = true;
  if (loop_) {
    loop_->cancel(this);  // the sync timer and a wait for POLLOUT
    timer_ = 0;
    if (done_) {
      // A write is waiting for the fd: it will never finish now, and some of
      // its bytes may not have landed (as in fd_sink::destroy).
      loop_->next_tick([this] { finish(make_error_code(errc::destroyed)); }, this);
    }
  }
  forget_fd();
  const std::error_code closed = log_->file().close();
  done(err ? err : closed);
}

// ---- shutdown: the same writes, blocking in poll() instead of the loop

// The rest of the call: the part being written, then the parts after each
// rotation.
std::error_code log_file_sink::pump_sync() noexcept {
  std::error_code ec;
  for (;;) {
    if ((ec = log_->out().write_all()) || !log_->more()) break;
    if ((ec = start_part())) break;
  }
  account();
  landed_sync_ = ec ? log_->landed() : 0;  // a failed sync fails them all
  log_->end_call();
  if (!ec) ec = log_->file().sync_if_dirty();
  return ec;
}

std::error_code log_file_sink::drain_sync() noexcept {
  if (!done_) return {};
  if (loop_) loop_->cancel(this);  // the wait for POLLOUT, and the sync timer
  timer_ = 0;
  done_.reset();
  return pump_sync();
}

std::error_code log_file_sink::write_sync(const write_batch& batch) noexcept {
  landed_sync_ = 0;
  if (closed_) return std::make_error_code(std::errc::bad_file_descriptor);
  log_->begin_call();
  std::error_code ec = before_part();
  if (ec || (ec = log_->start(batch))) {
    log_->end_call();
    return ec;
  }
  return pump_sync();
}

}  // namespace sluice
