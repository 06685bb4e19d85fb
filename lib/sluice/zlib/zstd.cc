// The zstd codec behind create_zstd_compress() and create_zstd_decompress():
// Node 22's ZstdCompressContext and ZstdDecompressContext (src/node_zlib.cc),
// ZSTD_compressStream2() and ZSTD_decompressStream() per step, and their
// errors named as Node names them: err.code the ZSTD_ErrorCode's name,
// err.errno its value, err.message zstd's ZSTD_getErrorName().
#include "sluice/zlib/zstd.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <string>

#include "sluice/base/errors.h"
#include "sluice/zlib/detail/codecs.h"
#include "sluice/zlib/zlib_error.h"

namespace sluice {
namespace {

const char* zstd_code_name(ZSTD_ErrorCode e) noexcept {
  switch (e) {
#define SLUICE_ZSTD(name) \
  case ZSTD_error_##name: return "ZSTD_error_" #name;
    SLUICE_ZSTD(no_error)
    SLUICE_ZSTD(GENERIC)
    SLUICE_ZSTD(prefix_unknown)
    SLUICE_ZSTD(version_unsupported)
    SLUICE_ZSTD(frameParameter_unsupported)
    SLUICE_ZSTD(frameParameter_windowTooLarge)
    SLUICE_ZSTD(corruption_detected)
    SLUICE_ZSTD(checksum_wrong)
    SLUICE_ZSTD(literals_headerWrong)
    SLUICE_ZSTD(dictionary_corrupted)
    SLUICE_ZSTD(dictionary_wrong)
    SLUICE_ZSTD(dictionaryCreation_failed)
    SLUICE_ZSTD(parameter_unsupported)
    SLUICE_ZSTD(parameter_combination_unsupported)
    SLUICE_ZSTD(parameter_outOfBound)
    SLUICE_ZSTD(tableLog_tooLarge)
    SLUICE_ZSTD(maxSymbolValue_tooLarge)
    SLUICE_ZSTD(maxSymbolValue_tooSmall)
    SLUICE_ZSTD(stabilityCondition_notRespected)
    SLUICE_ZSTD(stage_wrong)
    SLUICE_ZSTD(init_missing)
    SLUICE_ZSTD(memory_allocation)
    SLUICE_ZSTD(workSpace_tooSmall)
    SLUICE_ZSTD(dstSize_tooSmall)
    SLUICE_ZSTD(srcSize_wrong)
    SLUICE_ZSTD(dstBuffer_null)
    SLUICE_ZSTD(noForwardProgress_destFull)
    SLUICE_ZSTD(noForwardProgress_inputEmpty)
#undef SLUICE_ZSTD
    default: return "ZSTD_error_GENERIC";
  }
}

std::error_code zstd_error(std::size_t ret) {
  const ZSTD_ErrorCode e = ZSTD_getErrorCode(ret);
  return make_zlib_error(zstd_code_name(e), static_cast<int>(e), ZSTD_getErrorName(ret));
}

class zstd_compress_codec final : public detail::codec {
 public:
  // The level is checked before the context is made: a throw from the
  // constructor runs no destructor, so a context made first would leak.
  explicit zstd_compress_codec(const zstd_options& o) : cctx_(make_cctx(o.level)) {
    if (!cctx_) throw stream_error(make_zlib_error("ZSTD_error_memory_allocation", ZSTD_error_memory_allocation, "Allocation error"), "zstd");
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, o.level);
    // The zstd tool's frame: a checksum, so that zstd -t checks it.
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
  }
  ~zstd_compress_codec() override { ZSTD_freeCCtx(cctx_); }

  static ZSTD_CCtx* make_cctx(int level) {
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
      detail::throw_option_out_of_range("level", level, ZSTD_minCLevel(), ZSTD_maxCLevel());
    return ZSTD_createCCtx();
  }

  detail::codec_step step(std::span<const char> in, std::span<char> out, detail::codec_op op, flush_kind kind) override {
    ZSTD_EndDirective mode = ZSTD_e_continue;
    if (op == detail::codec_op::finish) mode = ZSTD_e_end;
    if (op == detail::codec_op::flush && kind != flush_kind::none) mode = ZSTD_e_flush;
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    const std::size_t ret = ZSTD_compressStream2(cctx_, &ob, &ib, mode);
    detail::codec_step s{.consumed = ib.pos, .produced = ob.pos, .more = false, .ec = {}};
    if (ZSTD_isError(ret))
      s.ec = zstd_error(ret);
    else
      s.more = mode != ZSTD_e_continue && ret != 0;  // bytes left to flush
    return s;
  }

 private:
  ZSTD_CCtx* cctx_;
};

class zstd_decompress_codec final : public detail::codec {
 public:
  explicit zstd_decompress_codec(const zstd_options&) : dctx_(ZSTD_createDCtx()) {
    if (!dctx_) throw stream_error(make_zlib_error("ZSTD_error_memory_allocation", ZSTD_error_memory_allocation, "Allocation error"), "zstd");
  }
  ~zstd_decompress_codec() override { ZSTD_freeDCtx(dctx_); }

  detail::codec_step step(std::span<const char> in, std::span<char> out, detail::codec_op op, flush_kind) override {
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    detail::codec_step s;
    const std::size_t ret = ZSTD_decompressStream(dctx_, &ob, &ib);
    s.consumed = ib.pos;
    s.produced = ob.pos;
    if (ZSTD_isError(ret)) {
      s.ec = zstd_error(ret);
      return s;
    }
    if (s.consumed > 0 || s.produced > 0) in_frame_ = ret != 0;
    // A full output buffer may leave decoded bytes inside zstd.
    s.more = ob.pos == ob.size;
    // Differs from Node: a stream that ends inside a frame is an error
    // (zstd -d says so too), so a truncated file is not taken for a whole
    // one; Node 22 ends it quietly.
    if (op == detail::codec_op::finish && !s.more && in_frame_)
      s.ec = make_zlib_error("ZSTD_error_srcSize_wrong", ZSTD_error_srcSize_wrong, "unexpected end of file");
    return s;
  }

 private:
  ZSTD_DCtx* dctx_;
  bool in_frame_ = false;
};

}  // namespace

std::unique_ptr<detail::codec> detail::make_zstd_compress_codec(int level) {
  return std::make_unique<zstd_compress_codec>(zstd_options{.level = level});
}
std::unique_ptr<detail::codec> detail::make_zstd_decompress_codec() {
  return std::make_unique<zstd_decompress_codec>(zstd_options{});
}

// Node 22: the zstd streams' _defaultFullFlushFlag is ZSTD_e_flush.
std::unique_ptr<zlib_base> create_zstd_compress(const zstd_options& o) {
  if (o.chunk_size < 64) detail::throw_option_out_of_range("chunkSize", static_cast<long long>(o.chunk_size), 64, {});
  return std::make_unique<zlib_base>(std::make_unique<zstd_compress_codec>(o), o.chunk_size, flush_kind::full);
}
std::unique_ptr<zlib_base> create_zstd_decompress(const zstd_options& o) {
  if (o.chunk_size < 64) detail::throw_option_out_of_range("chunkSize", static_cast<long long>(o.chunk_size), 64, {});
  return std::make_unique<zlib_base>(std::make_unique<zstd_decompress_codec>(o), o.chunk_size, flush_kind::full);
}

}  // namespace sluice
