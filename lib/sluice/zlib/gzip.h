// gzip: Node's zlib.createGzip() and its siblings: gzip, deflate (zlib's
// format) and raw deflate, compressing and decompressing, on zlib.
#pragma once

#include <cstddef>
#include <memory>

#include "sluice/zlib/zlib_base.h"

namespace sluice {

/// Node's zlib options (the ones of a stream without a dictionary). Values
/// out of zlib's range throw sluice::stream_error (ERR_OUT_OF_RANGE), as
/// Node throws RangeError.
struct zlib_options {
  /// -1 (zlib's default, 6) or 0 (stored) to 9 (smallest).
  int level = -1;
  /// Log2 of the window: 8 to 15 (9 to 15 when compressing).
  int window_bits = 15;
  /// 1 to 9: memory for the compressor's state.
  int mem_level = 8;
  /// Z_DEFAULT_STRATEGY (0), Z_FILTERED (1), Z_HUFFMAN_ONLY (2), Z_RLE (3), Z_FIXED (4).
  int strategy = 0;
  /// The largest chunk pushed to the readable side; at least 64.
  std::size_t chunk_size = 16 * 1024;
};

/// Node: zlib.createGzip(). Gzip format (RFC 1952).
///
///     auto gz = sluice::create_gzip({.level = 9});
///     gz->pipe(*out);
std::unique_ptr<zlib_base> create_gzip(const zlib_options& options = {});
/// Node: zlib.createGunzip(). Takes concatenated gzip members, as gzip -d.
std::unique_ptr<zlib_base> create_gunzip(const zlib_options& options = {});
/// Node: zlib.createDeflate(). zlib format (RFC 1950).
std::unique_ptr<zlib_base> create_deflate(const zlib_options& options = {});
/// Node: zlib.createInflate().
std::unique_ptr<zlib_base> create_inflate(const zlib_options& options = {});
/// Node: zlib.createDeflateRaw(). Raw deflate (RFC 1951), no header.
std::unique_ptr<zlib_base> create_deflate_raw(const zlib_options& options = {});
/// Node: zlib.createInflateRaw().
std::unique_ptr<zlib_base> create_inflate_raw(const zlib_options& options = {});
/// Node: zlib.createUnzip(): gzip or zlib format, told by the header.
std::unique_ptr<zlib_base> create_unzip(const zlib_options& options = {});

}  // namespace sluice
