#include "sluice/sinks/log_file_sink.h"

#include <poll.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/errors.h"
#include "sluice/sinks/log_file.h"

namespace sluice {

log_file_sink::log_file_sink(std::unique_ptr<detail::log_file> file) : file_(std::move(file)) {
  out_.emplace(file_->fd());
}

log_file_sink::log_file_sink(const std::string& path, const log_options& options)
    : log_file_sink(std::make_unique<detail::log_file>(path, options)) {}

std::unique_ptr<log_file_sink> log_file_sink::open(const std::string& path, const log_options& options,
                                                   std::error_code& ec) noexcept {
  const int fd = detail::log_file::open_fd(path, options.permissions);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  ec.clear();
  try {
    return std::unique_ptr<log_file_sink>(new log_file_sink(std::make_unique<detail::log_file>(fd, path, options)));
  } catch (const std::bad_alloc&) {  // log_file's constructor closed fd, or owns it by now
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
}

log_file_sink::~log_file_sink() {
  if (loop_) loop_->cancel(this);
}

const std::string& log_file_sink::path() const noexcept { return file_->path(); }
int log_file_sink::fd() const noexcept { return file_->fd(); }
std::uint64_t log_file_sink::size() const noexcept { return file_->size(); }
std::size_t log_file_sink::rotations() const noexcept { return file_->rotations(); }
std::size_t log_file_sink::reopens() const noexcept { return file_->reopens(); }
std::size_t log_file_sink::fsyncs() const noexcept { return file_->fsyncs(); }
std::uint64_t log_file_sink::bytes_written() const noexcept { return file_->bytes_written(); }

// ---- a write or writev

void log_file_sink::write(std::string_view chunk, write_done done) {
  done_.emplace(done);
  left_ = 0;
  if (const std::error_code ec = prepare(chunk.size())) return finish(ec);
  out_->start(chunk);
  pump();
}

void log_file_sink::writev(const write_batch& batch, write_done done) {
  done_.emplace(done);
  next_ = batch.begin();
  left_ = batch.size();
  if (const std::error_code ec = start_segment()) return finish(ec);
  pump();
}

// What must happen before the next chunk goes out: an error met between
// calls is this call's; then a reopen that was asked for; then a rotation if
// the chunk would take a non-empty file past max_size.
std::error_code log_file_sink::prepare(std::size_t next_chunk) noexcept {
  account();
  if (pending_) return std::exchange(pending_, {});
  if (!out_ || file_->fd() < 0) return std::make_error_code(std::errc::bad_file_descriptor);
  if (reopen_asked_) {
    reopen_asked_ = false;
    if (const std::error_code ec = reopen_now()) return ec;
  }
  return follow(file_->prepare(next_chunk));
}

// Hands out_ the chunks from next_ that fit in the file (at least one), and
// keeps the rest for after the next rotation.
std::error_code log_file_sink::start_segment() noexcept {
  if (const std::error_code ec = prepare((*next_).size())) return ec;
  const write_batch::iterator first = next_;
  const std::size_t n = file_->fitting(next_, left_);
  out_->start(first, n);
  left_ -= n;
  return {};
}

void log_file_sink::pump() noexcept {
  std::error_code ec;
  for (;;) {
    if (!out_->write_some(ec)) {
      account();
      loop_->watch(file_->fd(), POLLOUT, [this](short) { pump(); }, this);
      return;
    }
    if (ec || left_ == 0) break;
    if ((ec = start_segment())) break;
  }
  finish(ec);
}

void log_file_sink::finish(std::error_code ec) noexcept {
  account();
  after_call(ec);
  const write_done done = *done_;
  done_.reset();
  done(ec);
}

// After a call, before its callback: an error met during it, the every_bytes
// sync, a reopen that waited for it, the every_ms timer.
void log_file_sink::after_call(std::error_code& ec) noexcept {
  if (closed_) return;
  if (!ec && pending_) ec = std::exchange(pending_, {});
  if (ec) return;
  const log_options& o = file_->options();
  if (o.fsync == log_options::fsync_policy::every_bytes && file_->unsynced() > 0 &&
      file_->unsynced() >= o.fsync_bytes) {
    if ((ec = sync())) return;
  }
  if (reopen_asked_) {
    reopen_asked_ = false;
    if ((ec = reopen_now())) return;
  }
  if (o.fsync == log_options::fsync_policy::every_ms && file_->unsynced() > 0 && timer_ == 0 && loop_)
    timer_ = loop_->set_timeout(o.fsync_interval, [this] { on_timer(); }, this);
}

// Counts what out_ has written since last asked.
void log_file_sink::account() noexcept {
  if (!out_) return;
  file_->wrote(out_->bytes_written() - seen_);
  seen_ = out_->bytes_written();
  syscalls_ += out_->syscalls() - syscalls_seen_;
  syscalls_seen_ = out_->syscalls();
}

// After a rotation or reopen, out_ follows the file to its new fd.
std::error_code log_file_sink::follow(std::error_code ec) noexcept {
  if (out_ && file_->fd() >= 0 && out_->fd() != file_->fd()) out_->reset(file_->fd());
  return ec;
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
  return follow(file_->reopen());
}

std::error_code log_file_sink::sync() noexcept { return file_->sync(); }

void log_file_sink::on_timer() noexcept {
  timer_ = 0;
  if (closed_) return;
  account();
  if (file_->unsynced() == 0) return;
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
  if (!ec) ec = file_->sync_if_dirty();
  closed_ = true;
  const std::error_code closed = file_->close();
  done(ec ? ec : closed);
}

std::error_code log_file_sink::destroy(std::error_code err) noexcept {
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
  const std::error_code closed = file_->close();
  return err ? err : closed;
}

// ---- shutdown: the same writes, blocking in poll() instead of the loop

// The rest of the call: out_'s part, then the parts after each rotation.
std::error_code log_file_sink::pump_sync() noexcept {
  std::error_code ec;
  for (;;) {
    if ((ec = out_->write_all()) || left_ == 0) break;
    if ((ec = start_segment())) break;
  }
  account();
  if (!ec) ec = file_->sync_if_dirty();
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
  if (closed_) return std::make_error_code(std::errc::bad_file_descriptor);
  next_ = batch.begin();
  left_ = batch.size();
  if (const std::error_code ec = start_segment()) return ec;
  return pump_sync();
}

}  // namespace sluice
