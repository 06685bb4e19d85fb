// The defaults of the sink interface, for sinks that do not override them.
// (write_done, final_done and report_error are the stream's: writable.cc.)
#include "sluice/sinks/sink.h"

#include "sluice/errors.h"

namespace sluice {

void sink::writev(const write_batch&, write_done done) {
  done(make_error_code(errc::method_not_implemented));
}

void sink::final(final_done done) { done(); }

// A sink that cannot write synchronously.
std::error_code sink::drain_sync() noexcept { return make_error_code(errc::method_not_implemented); }
std::error_code sink::write_sync(const write_batch&) noexcept {
  return make_error_code(errc::method_not_implemented);
}

}  // namespace sluice
