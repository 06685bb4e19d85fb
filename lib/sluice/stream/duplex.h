// duplex: Node v20's Duplex (lib/internal/streams/duplex.js): one object that
// is a readable and a writable, with one emitter, two states and one destroy.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <system_error>

#include "sluice/sinks/sink.h"
#include "sluice/sources/source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// Node's Duplex options. `high_water_mark` and `object_mode` apply to both
/// sides; the per-side ones are used where the shared one is not set (as in
/// Node: highWaterMark wins over readableHighWaterMark).
struct duplex_options {
  std::optional<std::size_t> high_water_mark{};
  std::optional<std::size_t> readable_high_water_mark{};
  std::optional<std::size_t> writable_high_water_mark{};
  bool object_mode = false;
  bool readable_object_mode = false;
  bool writable_object_mode = false;
  /// When false, the writable side is ended once the readable side has
  /// ended (Node's allowHalfOpen).
  bool allow_half_open = true;
  /// False makes a duplex whose readable (writable) side is over from the
  /// start: ended, 'end' (or 'finish') never emitted.
  bool readable = true;
  bool writable = true;
  bool auto_destroy = true;
  bool emit_close = true;
  loop* event_loop = nullptr;
};

/// A Duplex: a readable fed by `src` and a writable draining into `snk`,
/// sharing one set of listeners ('data', 'end', 'drain', 'finish', 'error',
/// 'close', ...), as a socket is. destroy() destroys both sides at once: the
/// sink's destroy, then the source's, one 'error' and one 'close'. Once both
/// sides are done ('end' and 'finish'), auto_destroy destroys the stream.
///
///     sluice::duplex sock(std::make_unique<sluice::fd_source>(fd),
///                         std::make_unique<sluice::fd_sink>(fd, true));
///     sock.on(sluice::event::data, [&](std::string_view c) { sock.write(c); });  // echo
///
/// Adding a 'data' listener starts flowing, as on a readable. A duplex is used
/// from its loop's thread.
class duplex : public readable, public writable {
 public:
  duplex(std::unique_ptr<source> src, std::unique_ptr<sink> snk, const duplex_options& options = {});
  /// Each side with the whole of its own options (a socket passes on every
  /// writable_options field, present and future); `allow_half_open` as above.
  duplex(std::unique_ptr<source> src, std::unique_ptr<sink> snk, const readable_options& r,
         const writable_options& w, bool allow_half_open);
  ~duplex();

  /// Node: Duplex.prototype.destroy, which is Writable's: pending writes get
  /// ERR_STREAM_DESTROYED (or `err`), then 'error' (if err) and 'close'.
  duplex& destroy(std::error_code err = {});
  /// Node: destroyed, closed, errored: the two sides agree.
  bool destroyed() const noexcept { return readable::destroyed() && writable::destroyed(); }
  bool closed() const noexcept { return readable::closed(); }
  std::error_code errored() const noexcept {
    const std::error_code e = writable::errored();
    return e ? e : readable::errored();
  }
  bool allow_half_open() const noexcept { return allow_half_open_; }
  loop& event_loop() const noexcept { return readable::event_loop(); }
  /// The two sides agree on these; named once here for the duplex.
  using readable::readable_side;
  using writable::writable_side;

 protected:
  void rehome(loop& l) noexcept override;
};

}  // namespace sluice
