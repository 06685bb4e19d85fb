// zlib_base: Node's ZlibBase (lib/zlib.js), the transform every compressing
// and decompressing stream is: a codec run over each written chunk, its
// output pushed in chunk_size pieces, and Node's flush().
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <system_error>

#include "sluice/stream/transform.h"

namespace sluice {

/// The kinds of flush(), Node's zlib.constants.Z_*_FLUSH. zstd knows one
/// flush (ZSTD_e_flush), which every kind but none means there.
enum class flush_kind { none, partial, sync, full, block };

namespace detail {

/// What a codec is asked for by one step: Node's flush flag of the write.
enum class codec_op { process, flush, finish };

/// One step's outcome: bytes taken from `in`, bytes put into `out`, whether
/// the codec holds more output for the op (so another step must follow,
/// with fresh room), and an error that ends the stream.
struct codec_step {
  std::size_t consumed = 0;
  std::size_t produced = 0;
  bool more = false;
  std::error_code ec;
};

/// A compressor or decompressor as zlib_base drives it.
class codec {
 public:
  virtual ~codec() = default;
  virtual codec_step step(std::span<const char> in, std::span<char> out, codec_op op, flush_kind kind) = 0;
};

}  // namespace detail

/// A zlib or zstd stream: a transform whose readable side gives the
/// (de)compressed bytes. Made by create_gzip() and its siblings.
///
///     auto gz = sluice::create_gzip({.level = 6});
///     gz->pipe(*file);
///     gz->write(line);
///     gz->flush([](std::error_code) { /* the lines so far are decodable */ });
class zlib_base : public transform {
 public:
  zlib_base(std::unique_ptr<detail::codec> c, std::size_t chunk_size, flush_kind default_full_flush);

  /// Node: flush([kind, ]callback). Queued as a write, after the writes
  /// before it: once `cb` runs, all that was written before is in the
  /// readable side's output and decodable on its own. After end(), `cb`
  /// runs at 'end' (or on the next tick once finished), as in Node.
  void flush(flush_kind kind, write_cb cb = {});
  void flush(write_cb cb = {}) { flush(default_full_flush_, std::move(cb)); }

  /// Node: bytesWritten, the bytes the codec has taken in.
  std::size_t bytes_written() const noexcept;

 private:
  flush_kind default_full_flush_;
};

}  // namespace sluice
