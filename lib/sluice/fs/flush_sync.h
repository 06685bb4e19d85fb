// flush_sync: drives a worker writable from its own thread until what was
// written is in the file (sluice's own; Node has no synchronous flush).
#pragma once

#include <system_error>

#include "sluice/fs/write_stream.h"

namespace sluice {

/// Blocks the calling thread, which must be the stream's, until everything
/// written to `stream` before the call is in the file: writes held for
/// coalescing are handed over at once, and each batch's completion (its
/// callbacks, 'drain') runs here as soon as the worker is done with it,
/// rather than later on the loop. Writes that those callbacks make are
/// flushed too; corked writes stay corked.
///
/// Returns the stream's first error (ENOSPC, EPIPE, ...), or
/// ERR_STREAM_DESTROYED if it was destroyed with writes that never went out.
/// With nothing pending it returns at once. No allocation. It takes the
/// handle make_worker_writable() returns, so only a worker's stream can be
/// given.
///
/// Called from a write callback (or 'drain' listener) of the same stream, it
/// hands over what is held and waits for the bytes only: the completions
/// then come from the loop, after the callbacks still due in the current one.
///
///     auto out = sluice::make_worker_writable(worker);
///     out->write(line);
///     if (auto ec = sluice::flush_sync(*out)) report(ec);
std::error_code flush_sync(worker_writable& stream);

}  // namespace sluice
