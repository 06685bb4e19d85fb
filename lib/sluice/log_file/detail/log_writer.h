// log_writer: a log_rotation and the fd_writer that writes into it, one sink call
// at a time; shared by log_file_sink (on a loop) and log_worker (on the
// worker thread), which differ only in how they wait for the fd.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>

#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/log_file/detail/log_rotation.h"
#include "sluice/sinks/sink.h"

namespace sluice::detail {

/// Splits a call into parts that each fit the current file, rotating
/// between them, so that no chunk is split across two files:
///
///     w.begin_call();
///     ec = w.start(batch);                // rotates first if needed
///     while (!ec) {
///       ec = w.out().write_all();         // or write_some() and a wait
///       w.account();
///       if (ec || !w.more()) break;
///       ec = w.start_part();              // rotates, then the next part
///     }
///     w.end_call();                       // releases the log's lock
///
/// After a rotation or reopen, out() follows the file to its new fd.
class log_writer {
 public:
  explicit log_writer(std::unique_ptr<log_rotation> file) : file_(std::move(file)), out_(file_->fd()) {}

  log_rotation& file() noexcept { return *file_; }
  const log_rotation& file() const noexcept { return *file_; }
  fd_writer& out() noexcept { return out_; }
  const fd_writer& out() const noexcept { return out_; }

  /// A new call begins: nothing of it has landed yet (see landed()).
  void begin_call() noexcept {
    before_ = 0;
    out_started_ = false;
  }
  /// Starts a call of one chunk, rotating first if it would not fit.
  std::error_code start(std::string_view chunk) noexcept {
    left_ = 0;
    if (const std::error_code ec = follow(file_->prepare(chunk.size()))) return ec;
    out_.start(chunk);
    out_started_ = true;
    return {};
  }
  /// Starts a call over `batch` (one chunk or more): its first part.
  std::error_code start(const write_batch& batch) noexcept { return start(batch, 0); }
  /// The same, from its chunk `skip` (< batch.size()): a call tried again
  /// after its first `skip` chunks landed. landed() counts them too.
  std::error_code start(const write_batch& batch, std::size_t skip) noexcept {
    next_ = batch.begin();
    for (std::size_t i = 0; i < skip; ++i) ++next_;
    chunks_ = batch.size();
    left_ = chunks_ - skip;
    return start_part();
  }
  /// Chunks of the call are left after the part out() writes now.
  bool more() const noexcept { return left_ > 0; }
  /// Starts the next part: the chunks that fit in the file (at least one),
  /// after a rotation if even the first does not. The rest wait for the
  /// next part.
  std::error_code start_part() noexcept {
    before_ = chunks_ - left_;
    out_started_ = false;
    if (const std::error_code ec = follow(file_->prepare((*next_).size()))) return ec;
    const write_batch::iterator first = next_;
    const std::size_t n = file_->fitting(next_, left_);
    out_.start(first, n);
    out_started_ = true;
    left_ -= n;
    return {};
  }
  /// The chunks of the call written whole, from its first (see
  /// fd_writer::landed()): the earlier parts', and the current part's.
  std::size_t landed() const noexcept { return before_ + (out_started_ ? out_.landed() : 0); }

  /// After a call's last part, written or failed: other writers of the
  /// log may go on (see log_rotation's lock).
  void end_call() noexcept { file_->end_call(); }

  /// Gives the file the bytes out() has written since last asked.
  void account() noexcept {
    // Less than seen only when out() cut a torn chunk that was counted
    // already; the file's size then counts it until the next rotation.
    if (out_.bytes_written() > seen_) file_->wrote(out_.bytes_written() - seen_);
    seen_ = out_.bytes_written();
  }
  /// Closes the file and opens the path again (see log_rotation::reopen()).
  std::error_code reopen() noexcept {
    account();
    return follow(file_->reopen());
  }

 private:
  std::error_code follow(std::error_code ec) noexcept {
    if (file_->fd() >= 0 && out_.fd() != file_->fd()) out_.reset(file_->fd());
    return ec;
  }

  std::unique_ptr<log_rotation> file_;  // rotation, reopen and fsync live there
  fd_writer out_;
  std::size_t seen_ = 0;  // out_.bytes_written() already given to file_
  // The call in flight: the chunks after the part that out_ writes now, the
  // call's chunks, those of the parts before this one.
  write_batch::iterator next_;
  std::size_t left_ = 0;
  std::size_t chunks_ = 0;
  std::size_t before_ = 0;
  bool out_started_ = false;  // out_ is on this call's current part
};

}  // namespace sluice::detail
