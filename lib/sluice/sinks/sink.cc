// The defaults of the sink interface, for sinks that do not override them,
// and report_error(), which hands the error to the sink's host.
#include "sluice/sinks/sink.h"

#include "sluice/base/errors.h"

namespace sluice {

void sink::writev(const write_batch&, write_done done) {
  done(make_error_code(errc::method_not_implemented));
}

void sink::final(final_done done) { done(); }

void sink::report_error(std::error_code ec) noexcept {
  if (host_) host_->on_sink_error(ec);
}

// A sink that cannot write synchronously.
std::error_code sink::drain_sync() noexcept { return make_error_code(errc::method_not_implemented); }
std::error_code sink::write_sync(const write_batch&) noexcept {
  return make_error_code(errc::method_not_implemented);
}

}  // namespace sluice
