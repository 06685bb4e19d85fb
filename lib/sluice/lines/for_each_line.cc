#include "sluice/lines/for_each_line.h"

#include <memory>
#include <new>
#include <system_error>

#include "sluice/base/errors.h"
#include "sluice/stream/readable.h"

namespace sluice::detail {

namespace {

// One iteration. Its four listeners on the readable share it; it lives until
// the last of them is gone.
class line_iteration : public std::enable_shared_from_this<line_iteration> {
 public:
  line_iteration(readable& r, line_fn fn, lines_done done, const line_options& o)
      : r_(&r), splitter_(o.max_line_length), fn_(std::move(fn)), done_(std::move(done)) {}

  // The readable (the C++ object) went away with the lines unfinished: its
  // listeners, and so the last owners of this object, are being destroyed.
  ~line_iteration() {
    if (!finished_) {
      finished_ = true;
      done_(make_error_code(errc::premature_close));
    }
  }

  void start() {
    const auto self = shared_from_this();
    // 'error', 'end' and 'close' first: adding 'data' may start the flow.
    error_id_ = r_->on(event::error, [self](std::error_code ec) { self->finish(ec); });
    end_id_ = r_->on(event::end, [self] { self->on_end(); });
    close_id_ = r_->on(event::close, [self] { self->finish(make_error_code(errc::premature_close)); });
    data_id_ = r_->on(event::data, [self](std::string_view chunk) { self->on_data(chunk); });
  }

 private:
  // Every line the chunk completes, then the start of an unfinished one is
  // kept by the splitter, so the chunk may go.
  // A listener must not throw (emit() is noexcept): memory that runs out
  // (a line carried across chunks, or whatever fn allocates) ends the lines
  // with ENOMEM instead of std::terminate, which would end the program.
  void on_data(std::string_view chunk) noexcept {
    if (finished_) return;
    try {
      split(chunk);
    } catch (const std::bad_alloc&) {
      stop(std::make_error_code(std::errc::not_enough_memory));
    }
  }

  void split(std::string_view chunk) {
    splitter_.feed(chunk);
    std::error_code ec;
    while (auto line = splitter_.next(ec)) {
      if (!fn_(*line)) return stop({});
      // fn destroyed the stream: no more lines. Its 'error' or 'close'
      // (ERR_STREAM_PREMATURE_CLOSE) follows and ends the iteration.
      if (r_->destroyed()) return;
    }
    if (ec) stop(ec);
  }

  void on_end() noexcept {
    if (finished_) return;
    std::error_code ec;
    try {
      if (auto last = splitter_.finish(ec)) {
        if (!fn_(*last)) return stop({});
      }
    } catch (const std::bad_alloc&) {
      ec = std::make_error_code(std::errc::not_enough_memory);
    }
    if (ec) return stop(ec);
    finish({});
  }

  // Leaves the loop early: the rest of the data is not wanted.
  void stop(std::error_code ec) {
    if (finished_) return;
    detach();
    r_->destroy();
    call_done(ec);
  }

  void finish(std::error_code ec) {
    if (finished_) return;
    detach();
    call_done(ec);
  }

  void detach() noexcept {
    finished_ = true;
    // Listeners removed during an emit are still called by it; finished_
    // makes them return at once.
    r_->off(event::data, data_id_);
    r_->off(event::end, end_id_);
    r_->off(event::error, error_id_);
    r_->off(event::close, close_id_);
  }

  void call_done(std::error_code ec) {
    const lines_done done = std::move(done_);
    done(ec);
  }

  readable* r_;
  line_splitter splitter_;
  line_fn fn_;
  lines_done done_;
  bool finished_ = false;
  listener_id data_id_ = 0, end_id_ = 0, error_id_ = 0, close_id_ = 0;
};

}  // namespace

void for_each_line(readable& r, line_fn fn, lines_done done, const line_options& options) {
  // A stream that is already over has no lines to give: say why, from the
  // loop, as for any other ending.
  if (r.errored() || r.readable_ended() || r.destroyed()) {
    const std::error_code ec = r.errored()          ? r.errored()
                               : r.readable_ended() ? std::error_code{}
                                                    : make_error_code(errc::premature_close);
    r.event_loop().next_tick([d = std::move(done), ec]() mutable { d(ec); });
    return;
  }
  std::make_shared<line_iteration>(r, std::move(fn), std::move(done), options)->start();
}

}  // namespace sluice::detail
