// compress_file: one whole file compressed into another, gzip or zstd, on
// the calling thread (log rotation's background thread), with the codecs of
// the compression streams (zlib/detail/codecs.h) driven without a stream.
#pragma once

#include <string_view>
#include <system_error>

#include "sluice/log_file/log_options.h"

namespace sluice {

namespace detail {

/// The name suffix of `c`: ".gz", ".zst", "" for none.
std::string_view compression_suffix(log_options::compression c) noexcept;

/// Reads `in_fd` to its end and writes it compressed to `out_fd` (one gzip
/// member as gzip -n writes it, or one zstd frame with a checksum), at
/// `level` (0: the codec's default). errc::operation_not_supported when
/// this build lacks the codec.
std::error_code compress_file(int in_fd, int out_fd, log_options::compression c, int level) noexcept;

/// Whether `packed_fd`, read from its start to its end, is one whole
/// compressed copy of `plain_fd` (read from its start): it decompresses
/// without error (what follows a member or frame is read as another, as
/// gzip -d and zstd -d read it), it is not cut short, and what it gives is
/// the plain file's bytes, all of them. False for anything else
/// (cut short, corrupt, another file's copy, trailing bytes); an error only
/// when a file cannot be read. The start-up recovery's test before it removes
/// a plain rotated file: a compressed twin that merely exists proves nothing.
std::error_code is_compressed_copy(int packed_fd, int plain_fd, log_options::compression c, bool& same) noexcept;

}  // namespace detail
}  // namespace sluice
