#include "sluice/stream/pipe_zero_copy.h"

#include <memory>

#include "sluice/sinks/fd_sink.h"
#include "sluice/sources/fd_source.h"

namespace sluice {

namespace {

// The rule of pipe_zero_copy(): the moves could not be told from the pipe's
// own reads and writes. `piped` turns false at dst's 'unpipe'.
bool invisible(const readable& src, const writable& dst, const bool& piped) noexcept {
  return piped && src.readable_flowing().value_or(false) && src.readable_length() == 0 && !src.destroyed() &&
         !src.eof_pushed() && src.pipes_count() == 1 && src.listener_count(event::data) == 1 &&
         src.listener_count(event::readable) == 0 && dst.is_writable() && dst.writable_length() == 0 &&
         dst.writable_corked() == 0;
}

}  // namespace

namespace detail {

writable& pipe_fds(readable& src, fd_source& in, writable& dst, fd_sink& out, const pipe_options& options) {
  const bool may_move = !src.readable_object_mode() && !dst.writable_object_mode() && src.pipes_count() == 0 &&
                        src.listener_count(event::data) == 0;
  src.pipe(dst, options);
  if (!may_move) return dst;
  // Shared with the 'unpipe' listener, which dst may keep after src is gone.
  auto piped = std::make_shared<bool>(true);
  dst.once(event::unpipe, [piped] { *piped = false; });
  if (!invisible(src, dst, *piped)) return dst;
  in.move_to(out.fd(), [&src, &dst, piped] { return invisible(src, dst, *piped); });
  return dst;
}

}  // namespace detail

}  // namespace sluice
