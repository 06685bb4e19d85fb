// pipe_zero_copy: Readable.prototype.pipe() from an fd to an fd, with the
// bytes moved by the kernel (splice, copy_file_range, sendfile) whenever
// nobody could see the difference. pipeline() and sluice-cat use it.
#pragma once

#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// sluice's own (Node cannot do this): src.pipe(dst, options), the same
/// events ('pipe', 'resume', 'unpipe', 'end', and dst's end() unless
/// options.end is false), but when src reads an fd (an fd_source: a file,
/// a pipe) and dst writes an fd (an fd_sink: a file, a pipe, a socket,
/// /dev/null), the bytes go from fd to fd inside the kernel
/// (fd_source::move_to()), never through the streams.
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
writable& pipe_zero_copy(readable& src, writable& dst, const pipe_options& options = {});

}  // namespace sluice
