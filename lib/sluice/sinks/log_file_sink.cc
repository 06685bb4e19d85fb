#include "sluice/sinks/log_file_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/errors.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace {

std::error_code last_error() noexcept { return {errno, std::system_category()}; }

// rename() and unlink() where a missing source is no failure: rotated files
// may have gaps, and the log itself may have been removed under us.
std::error_code rename_if_there(const std::string& from, const std::string& to) noexcept {
  if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) return last_error();
  return {};
}

std::error_code unlink_if_there(const std::string& path) noexcept {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return last_error();
  return {};
}

// open_fd() or throw, before anything else can touch errno.
int open_or_throw(int fd, const std::string& path) {
  if (fd < 0) throw stream_error(errno, std::system_category(), "cannot open " + path);
  return fd;
}

}  // namespace

int log_file_sink::open_fd(const std::string& path, mode_t permissions) noexcept {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, permissions);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Owns fd from the start: closes it if anything here throws.
log_file_sink::log_file_sink(int fd, const std::string& path, const log_options& options) try
    : path_(path), options_(options), fd_(fd) {
  rotated_.reserve(options.keep);
  for (unsigned i = 1; i <= options.keep; ++i) rotated_.push_back(path + "." + std::to_string(i));
  out_.emplace(fd);
  struct stat st {};
  if (::fstat(fd, &st) == 0) file_size_ = static_cast<std::uint64_t>(st.st_size);
} catch (...) {
  ::close(fd);
}

log_file_sink::log_file_sink(const std::string& path, const log_options& options)
    : log_file_sink(open_or_throw(open_fd(path, options.permissions), path), path, options) {}

std::unique_ptr<log_file_sink> log_file_sink::open(const std::string& path, const log_options& options,
                                                   std::error_code& ec) noexcept {
  const int fd = open_fd(path, options.permissions);
  if (fd < 0) {
    ec = last_error();
    return nullptr;
  }
  ec.clear();
  try {
    return std::unique_ptr<log_file_sink>(new log_file_sink(fd, path, options));
  } catch (const std::bad_alloc&) {  // the constructor closed fd
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
}

log_file_sink::~log_file_sink() {
  if (loop_) loop_->cancel(this);
  close_fd();
}

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
  if (!out_ || fd_ < 0) return std::make_error_code(std::errc::bad_file_descriptor);
  if (reopen_asked_) {
    reopen_asked_ = false;
    if (const std::error_code ec = reopen_now()) return ec;
  }
  const std::uint64_t max = options_.max_size;
  if (max != 0 && next_chunk > 0 && file_size_ > 0 && file_size_ + next_chunk > max) return rotate();
  return {};
}

// Hands out_ the chunks from next_ that fit in the file (at least one), and
// keeps the rest for after the next rotation.
std::error_code log_file_sink::start_segment() noexcept {
  if (const std::error_code ec = prepare((*next_).size())) return ec;
  const std::uint64_t max = options_.max_size;
  if (max == 0) {
    out_->start(next_, left_);
    left_ = 0;
    return {};
  }
  const write_batch::iterator first = next_;
  std::uint64_t size = file_size_;
  std::size_t n = 0;
  for (; n < left_; ++n, ++next_) {
    const std::size_t chunk = (*next_).size();
    if (n > 0 && chunk > 0 && size > 0 && size + chunk > max) break;
    size += chunk;
  }
  out_->start(first, n);
  left_ -= n;
  return {};
}

void log_file_sink::pump() noexcept {
  std::error_code ec;
  for (;;) {
    if (!out_->write_some(ec)) {
      account();
      loop_->watch(fd_, POLLOUT, [this](short) { pump(); }, this);
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
  if (options_.fsync == log_options::fsync_policy::every_bytes && unsynced_ > 0 &&
      unsynced_ >= options_.fsync_bytes) {
    if ((ec = sync())) return;
  }
  if (reopen_asked_) {
    reopen_asked_ = false;
    if ((ec = reopen_now())) return;
  }
  if (options_.fsync == log_options::fsync_policy::every_ms && unsynced_ > 0 && timer_ == 0 && loop_)
    timer_ = loop_->set_timeout(options_.fsync_interval, [this] { on_timer(); }, this);
}

// Counts what out_ has written since last asked.
void log_file_sink::account() noexcept {
  if (!out_) return;
  const std::size_t n = out_->bytes_written() - seen_;
  seen_ = out_->bytes_written();
  file_size_ += n;
  unsynced_ += n;
  bytes_written_ += n;
  syscalls_ += out_->syscalls() - syscalls_seen_;
  syscalls_seen_ = out_->syscalls();
}

// ---- rotation, reopen, sync

std::error_code log_file_sink::rotate() noexcept {
  if (const std::error_code ec = sync_if_dirty()) return ec;
  if (rotated_.empty()) {
    if (const std::error_code ec = unlink_if_there(path_)) return ec;
  } else {
    // Only the files below the first missing number move up, into the gap;
    // with no gap, app.log.<keep-1> replaces the oldest, app.log.<keep>.
    std::size_t gap = 0;
    struct stat st {};
    while (gap + 1 < rotated_.size() && !(::lstat(rotated_[gap].c_str(), &st) != 0 && errno == ENOENT)) ++gap;
    for (std::size_t i = gap; i > 0; --i)
      if (const std::error_code ec = rename_if_there(rotated_[i - 1], rotated_[i])) return ec;
    if (const std::error_code ec = rename_if_there(path_, rotated_[0])) return ec;
  }
  const int fd = open_fd(path_, options_.permissions);
  if (fd < 0) return last_error();
  ++rotations_;
  return adopt(fd);
}

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
  const std::error_code synced = sync_if_dirty();
  const int fd = open_fd(path_, options_.permissions);
  if (fd < 0) return last_error();
  ++reopens_;
  const std::error_code closed = adopt(fd);
  return synced ? synced : closed;
}

// Writes go to `fd` from now on; the old one is closed (its error returned).
std::error_code log_file_sink::adopt(int fd) noexcept {
  account();
  const std::error_code closed = close_fd();
  fd_ = fd;
  struct stat st {};
  file_size_ = ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  unsynced_ = 0;
  seen_ = 0;
  syscalls_seen_ = 0;
  try {
    out_.emplace(fd);  // sees whether the new file is a pipe, and so on
  } catch (const std::bad_alloc&) {
    out_.reset();
    return std::make_error_code(std::errc::not_enough_memory);
  }
  return closed;
}

std::error_code log_file_sink::close_fd() noexcept {
  if (fd_ < 0) return {};
  // close() is not retried on EINTR: on Linux the fd is gone either way.
  const int r = ::close(std::exchange(fd_, -1));
  return r != 0 ? last_error() : std::error_code{};
}

std::error_code log_file_sink::sync() noexcept {
  ++fsyncs_;
  int r;
  do {
    r = ::fsync(fd_);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return last_error();
  unsynced_ = 0;
  return {};
}

std::error_code log_file_sink::sync_if_dirty() noexcept {
  if (options_.fsync == log_options::fsync_policy::never || unsynced_ == 0 || fd_ < 0) return {};
  return sync();
}

void log_file_sink::on_timer() noexcept {
  timer_ = 0;
  if (closed_) return;
  account();
  if (unsynced_ == 0) return;
  if (const std::error_code ec = sync()) report(ec);
}

// An error met outside the sink's calls: the call in flight reports it, or
// the bound stream is destroyed with it, or the next call reports it.
void log_file_sink::report(std::error_code ec) noexcept {
  if (!done_ && stream_) {
    stream_->destroy(ec);
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
  if (!ec) ec = sync_if_dirty();
  closed_ = true;
  const std::error_code closed = close_fd();
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
  const std::error_code closed = close_fd();
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
  if (!ec) ec = sync_if_dirty();
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

// ---- factories

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options,
                                            const writable_options& stream_options) {
  auto w = std::make_unique<writable>(std::make_unique<log_file_sink>(path, options), stream_options);
  static_cast<log_file_sink&>(w->get_sink()).bind(*w);
  return w;
}

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options) {
  return make_log_writable(path, options, writable_options{});
}

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options,
                                            const writable_options& stream_options, std::error_code& ec) noexcept {
  auto sink = log_file_sink::open(path, options, ec);
  if (!sink) return nullptr;
  try {
    auto w = std::make_unique<writable>(std::move(sink), stream_options);
    static_cast<log_file_sink&>(w->get_sink()).bind(*w);
    return w;
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  } catch (const std::system_error& e) {  // invalid stream options
    ec = e.code();
  }
  return nullptr;
}

}  // namespace sluice
