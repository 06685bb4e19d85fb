// The defaults of the sink interface, for sinks that do not override them,
// and the hooks that reach the sink's host: report_error() and set_caps().
#include "sluice/sinks/sink.h"

#include "sluice/base/assert.h"
#include "sluice/base/errors.h"

namespace sluice {

// Reached only when the host calls writev() on a sink that did not
// override it, which a writable does only when caps().writev says it did:
// the flag without its override, a bug of that sink.
void sink::writev(const write_batch&, write_done done) {
  SLUICE_ASSERT(!caps_.writev && "sink_caps::writev is set but writev() is not overridden");
  done(make_error_code(errc::method_not_implemented));
}

// Likewise for final(): a writable calls it only when caps().final is set.
void sink::final(final_done done) {
  SLUICE_ASSERT(!caps_.final && "sink_caps::final is set but final() is not overridden");
  done();
}

void sink::set_caps(sink_caps caps) noexcept {
  caps_ = caps;
  if (host_) host_->on_sink_caps(caps_);
}

void sink::report_error(std::error_code ec) noexcept {
  if (host_) host_->on_sink_error(ec);
}

}  // namespace sluice
