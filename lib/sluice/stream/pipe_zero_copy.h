// pipe_zero_copy: Readable.prototype.pipe() from an fd to an fd, with the
// bytes moved by the kernel (splice, copy_file_range, sendfile) whenever
// nobody could see the difference. pipeline() and sluice-cat use it.
#pragma once

#include <concepts>

#include "sluice/sinks/fd_sink.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/typed_stream.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// sluice's own (Node cannot do this): src.pipe(dst, options), the same
/// events ('pipe', 'resume', 'unpipe', 'end', and dst's end() unless
/// options.end is false), but src reads an fd (a readable over an
/// fd_source: make_fd_readable(), make_file_readable()) and dst writes an
/// fd (a writable over an fd_sink or a sink derived from it:
/// make_fd_writable(), make_file_writable()), and the bytes go from fd to fd
/// inside the kernel (fd_source::move_to()), never through the streams. The
/// handles say their source's and sink's types, so nothing is cast.
///
/// The kernel moves the bytes only while that is invisible, which this
/// checks before every move: src is in byte mode, flowing, with nothing
/// buffered, piped into dst alone, with no 'data' listener but the pipe's
/// and no 'readable' listener; dst is in byte mode and writable (not
/// ending, not destroyed), not corked, with nothing buffered or being
/// written. Once any of that is false (a 'data' listener added, pause(),
/// unpipe(), a write of your own to dst), or the kernel refuses the call,
/// or a call fails, the pipe goes on as a normal pipe for good, from the
/// byte where the kernel stopped; an error is then met again by the normal
/// read or write, and reported by the stream it belongs to, as Node would.
///
/// What differs from a normal pipe while the kernel moves the bytes: src
/// emits no 'data' and dst no 'drain', and neither shows backpressure (no
/// 'pause' and resume cycles): the events are those of a normal pipe whose
/// destination keeps up. dst's write count, src's bytes_read() and
/// readable_did_read() stay as they were.
///
///     auto in = sluice::make_file_readable("big.log");
///     auto out = sluice::make_fd_writable(socket_fd);
///     sluice::pipe_zero_copy(*in, *out);  // sendfile(2)
///     sluice::loop::current().run();
template <class Sink>
  requires std::derived_from<Sink, fd_sink>
writable& pipe_zero_copy(typed_readable<fd_source>& src, typed_writable<Sink>& dst, const pipe_options& options = {});

namespace detail {
/// pipe_zero_copy() once the handles have given their fd_source and fd_sink.
writable& pipe_fds(readable& src, fd_source& in, writable& dst, fd_sink& out, const pipe_options& options);
}  // namespace detail

template <class Sink>
  requires std::derived_from<Sink, fd_sink>
writable& pipe_zero_copy(typed_readable<fd_source>& src, typed_writable<Sink>& dst, const pipe_options& options) {
  return detail::pipe_fds(src, src.get_source(), dst, dst.get_sink(), options);
}

}  // namespace sluice
