// codecs: the zlib and zstd codecs of the compression streams, for who drives
// one without a stream around it (log rotation compresses a whole file, and
// checks a compressed copy, on its own thread). Each is declared only when
// its library is built in (SLUICE_HAS_ZLIB, SLUICE_HAS_ZSTD).
#pragma once

#include <memory>

#include "sluice/zlib/zlib_base.h"

namespace sluice::detail {

// Each throws stream_error for a level out of range or a codec that cannot be
// made, and std::bad_alloc.
#ifdef SLUICE_HAS_ZLIB
/// One gzip member, as create_gzip() writes it (gzip -n's header).
std::unique_ptr<codec> make_gzip_codec(int level);
/// create_gunzip()'s reading.
std::unique_ptr<codec> make_gunzip_codec();
#endif
#ifdef SLUICE_HAS_ZSTD
/// One zstd frame with a checksum, as create_zstd_compress() writes it.
std::unique_ptr<codec> make_zstd_compress_codec(int level);
/// create_zstd_decompress()'s reading.
std::unique_ptr<codec> make_zstd_decompress_codec();
#endif

}  // namespace sluice::detail
