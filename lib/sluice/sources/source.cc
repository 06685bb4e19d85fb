// report_error() hands the error to the source's host (sources/source.h).
#include "sluice/sources/source.h"

namespace sluice {

void source::report_error(std::error_code ec) noexcept {
  if (host_) host_->on_source_error(ec);
}

}  // namespace sluice
