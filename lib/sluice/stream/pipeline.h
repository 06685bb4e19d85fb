// pipeline: Node v20's stream.pipeline(...streams, callback)
// (lib/internal/streams/pipeline.js), for streams.
#pragma once

#include <initializer_list>
#include <stop_token>
#include <system_error>
#include <vector>

#include "sluice/base/function.h"
#include "sluice/stream/stream_ref.h"

namespace sluice {

struct pipeline_options {
  /// End the last stream when the one before it ends (Node: options.end).
  bool end = true;
  /// Node: options.signal. Once stopped, every stream not yet done is
  /// destroyed with an AbortError (errc::aborted, ABORT_ERR), which `cb`
  /// gets. A token stopped already aborts on a microtask, as Node's does.
  /// request_stop() may come from any thread (see add_abort_listener()).
  std::stop_token signal{};
};

using pipeline_cb = inline_function<void(std::error_code), 16>;

/// Node: pipeline(source, ...transforms, destination, callback). Pipes each
/// stream into the next with backpressure; `cb` is called once, on a later
/// tick, when the last stream has finished, or with the first error: an
/// error anywhere (or a stream closed early: ERR_STREAM_PREMATURE_CLOSE)
/// destroys every stream of the pipeline that is not yet done.
///
///     sluice::pipeline({in, upper, out}, [](std::error_code ec) {
///       if (ec) report(ec);
///     });
///
/// Every stream but the last must be readable, every one but the first
/// writable; stream_error (ERR_INVALID_ARG_TYPE) otherwise, and for fewer
/// than two streams (ERR_MISSING_ARGS). The streams must outlive the call
/// of `cb`.
void pipeline(std::initializer_list<stream_ref> streams, pipeline_cb cb, const pipeline_options& options = {});
void pipeline(const std::vector<stream_ref>& streams, pipeline_cb cb, const pipeline_options& options = {});

}  // namespace sluice
