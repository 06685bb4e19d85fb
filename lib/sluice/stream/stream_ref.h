// stream_ref: any stream — a readable, a writable or a duplex — as the
// functions that take "a stream" in Node (finished, pipeline) see it.
#pragma once

#include <cstddef>
#include <optional>
#include <system_error>

#include "sluice/stream/duplex.h"

namespace sluice {

/// Names a stream and its sides. Made implicitly from a readable, a writable
/// or a duplex; a duplex passed as either side is still seen as a duplex.
class stream_ref {
 public:
  stream_ref(readable& r) noexcept;  // NOLINT: implicit on purpose
  stream_ref(writable& w) noexcept;  // NOLINT
  stream_ref(duplex& d) noexcept : r_(&d), w_(&d) {}  // NOLINT

  /// The readable side, or null for a writable.
  readable* readable_side() const noexcept { return r_; }
  /// The writable side, or null for a readable.
  writable* writable_side() const noexcept { return w_; }
  /// The stream's one emitter.
  emitter& events() const noexcept { return w_ ? static_cast<emitter&>(*w_) : static_cast<emitter&>(*r_); }
  loop& event_loop() const noexcept { return w_ ? w_->event_loop() : r_->event_loop(); }
  /// The key this stream's deferred work is cancelled by when it goes away.
  const void* owner() const noexcept { return w_ ? static_cast<const void*>(w_) : static_cast<const void*>(r_); }

  /// Node: stream.destroy(err), the duplex's one destroy for a duplex.
  void destroy(std::error_code err) const;
  /// Node: stream.destroyed.
  bool destroyed() const noexcept;

  // Node's lib/internal/streams/utils.js predicates, which finished() and
  // pipeline() decide by. Node's null (not that kind of stream) is false,
  // except where Node tells null from false: those return an optional.
  bool is_readable_node_stream() const noexcept;
  bool is_writable_node_stream() const noexcept;
  bool is_readable_finished(bool strict = true) const noexcept;
  bool is_writable_finished(bool strict = true) const noexcept;
  bool is_writable_ended() const noexcept;
  std::optional<bool> is_readable() const noexcept;
  std::optional<bool> is_writable() const noexcept;
  bool is_destroyed() const noexcept;
  bool is_finished(std::optional<bool> readable, std::optional<bool> writable) const noexcept;
  bool is_closed() const noexcept;
  bool will_emit_close() const noexcept;
  std::error_code readable_errored() const noexcept;
  std::error_code writable_errored() const noexcept;
  bool error_emitted() const noexcept;
  std::size_t pending_cb() const noexcept;

 private:
  readable* r_;
  writable* w_;
};

}  // namespace sluice
