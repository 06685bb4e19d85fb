// zstd: Node 22's zlib.createZstdCompress() and createZstdDecompress(), on
// libzstd.
#pragma once

#include <cstddef>
#include <memory>

#include "sluice/zlib/zlib_base.h"

namespace sluice {

/// Node 22's zstd options: the level (Node: params[ZSTD_c_compressionLevel])
/// and the chunk size. Out-of-range values throw sluice::stream_error.
struct zstd_options {
  /// 1 (fastest) to 19 (ZSTD_maxCLevel() with the ultra levels: 22), or
  /// negative for zstd's fast modes; 3 is zstd's default.
  int level = 3;
  /// The largest chunk pushed to the readable side; at least 64.
  std::size_t chunk_size = 16 * 1024;
};

/// Node 22: zlib.createZstdCompress(). One zstd frame, with a checksum, as
/// the zstd tool writes it; flush() ends a block (ZSTD_e_flush).
///
///     auto z = sluice::create_zstd_compress({.level = 19});
///     z->pipe(*out);
std::unique_ptr<zlib_base> create_zstd_compress(const zstd_options& options = {});
/// Node 22: zlib.createZstdDecompress(). Takes concatenated frames, as zstd -d.
std::unique_ptr<zlib_base> create_zstd_decompress(const zstd_options& options = {});

}  // namespace sluice
