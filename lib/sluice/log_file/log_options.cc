#include "sluice/log_file/log_options.h"

namespace sluice {

bool log_compression_available(log_options::compression c) noexcept {
  switch (c) {
    case log_options::compression::none: return true;
#ifdef SLUICE_HAS_ZLIB
    case log_options::compression::gzip: return true;
#endif
#ifdef SLUICE_HAS_ZSTD
    case log_options::compression::zstd: return true;
#endif
    default: return false;
  }
}

compression_levels log_compression_levels(log_options::compression c) noexcept {
  switch (c) {
    case log_options::compression::gzip: return {1, 9};
    case log_options::compression::zstd: return {1, 22};
    default: return {0, 0};
  }
}

}  // namespace sluice
