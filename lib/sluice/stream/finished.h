// finished: Node v20's stream.finished(stream, options, callback)
// (lib/internal/streams/end-of-stream.js).
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <system_error>

#include "sluice/base/function.h"
#include "sluice/stream/stream_ref.h"

namespace sluice {

struct finished_options {
  /// Wait for the readable side's 'end'. Unset: when the stream is readable
  /// (a duplex made with readable = false is not).
  std::optional<bool> readable{};
  /// Wait for the writable side's 'finish'. Unset: when it is writable.
  /// True on a readable, which has no writable side: its 'end' or 'close'
  /// counts as the finish (Node's branch for legacy streams).
  std::optional<bool> writable{};
  /// Report an 'error' as soon as it is emitted (Node: options.error).
  bool error = true;
  /// Node: options.signal. Once stopped, `cb` is called with an AbortError
  /// (errc::aborted, ABORT_ERR) and the listeners come off; the stream is
  /// left as it is. A token stopped already calls `cb` on the next tick.
  /// request_stop() may come from any thread (see add_abort_listener()).
  std::stop_token signal{};
};

using finished_cb = inline_function<void(std::error_code), 16>;

/// Node: finished(stream, options, cb). Calls `cb` once when the stream is
/// done: with no error after 'end' and/or 'finish' (and 'close', when the
/// stream will emit one), with the stream's error after 'error', or with
/// ERR_STREAM_PREMATURE_CLOSE after a 'close' that came before them. Called
/// on a stream that is already done, `cb` runs on the next tick.
///
/// Returns Node's cleanup function: it takes the listeners off the stream
/// and `cb` is never called after it. The stream must outlive the listeners:
/// call the cleanup or keep the stream until `cb` has run.
///
///     sluice::finished(out, [](std::error_code ec) {
///       if (ec) report(ec); else done();
///     });
std::function<void()> finished(stream_ref stream, finished_cb cb, const finished_options& options = {});

}  // namespace sluice
