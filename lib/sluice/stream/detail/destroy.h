// destroy: Node's lib/internal/streams/destroy.js. One destroy, one
// errorOrDestroy and one 'error'/'close' emission for a stream's one or two
// sides: a readable, a writable, or a duplex that is both. A duplex has one
// emitter and two states; destroying it marks both, calls both halves'
// destroy once, and emits 'error' and 'close' once.
#pragma once

#include <system_error>

namespace sluice {
class readable;
class writable;
}  // namespace sluice

namespace sluice::detail {

class stream_side;

// Either pointer may be null (not both): the sides the stream has. They
// work on the sides through stream_side, whose friend this is.
struct destroy_impl {
  // Node: destroy(err) of destroy.js. The writable's own part (errorBuffer,
  // Writable.prototype.destroy) is the caller's.
  static void destroy(readable* r, writable* w, std::error_code err) noexcept;
  // Node: onDestroy(err): the stream is closed; 'error' and 'close' next tick.
  static void on_destroy(readable* r, writable* w, std::error_code err) noexcept;
  // Node: errorOrDestroy(stream, err, sync).
  static void error_or_destroy(readable* r, writable* w, std::error_code err, bool sync) noexcept;
  // The same for the stream of which `side` is a side (pipe()'s destination).
  static void error_or_destroy(stream_side& side, std::error_code err, bool sync) noexcept;
  // Node: emitErrorNT() and emitCloseNT().
  static void emit_error_nt(readable* r, writable* w, std::error_code err) noexcept;
  static void emit_close_nt(readable* r, writable* w) noexcept;
  // Node: checkError(): the first error of each side.
  static void check_error(readable* r, writable* w, std::error_code err) noexcept;

 private:
  struct sides;
};

}  // namespace sluice::detail
