#include "sluice/fs/flush_sync.h"

#include "sluice/base/errors.h"

namespace sluice {

// The sink waits for the worker and completes the rounds; the stream hands
// over what it holds and says what became of the writes.
std::error_code flush_sync(worker_writable& stream) {
  worker_sink& s = stream.get_sink();
  if (s.completing()) {
    // Inside this stream's own write_done: see flush_sync(). What is held
    // is handed over all the same, and waited for.
    stream.flush_held();
    if (const std::error_code ec = s.wait_written()) return ec;
    return stream.errored();
  }
  s.begin_flush();
  stream.flush_held();
  s.end_flush();
  if (const std::error_code ec = stream.errored()) return ec;
  if (stream.destroyed() && stream.writable_length() > 0) return make_error_code(errc::destroyed);
  return {};
}

}  // namespace sluice
