// The zlib codec behind create_gzip() and its siblings: Node's ZlibContext
// (src/node_zlib.cc), deflate() or inflate() per step with the write's flush
// flag, and Node's reading of zlib's return codes.
#include "sluice/zlib/gzip.h"

#include <zlib.h>

#include <string>

#include "sluice/base/errors.h"
#include "sluice/zlib/detail/codecs.h"
#include "sluice/zlib/zlib_error.h"

namespace sluice {
namespace {

enum class zlib_mode { deflate, inflate, gzip, gunzip, deflate_raw, inflate_raw, unzip };

bool compresses(zlib_mode m) noexcept {
  return m == zlib_mode::deflate || m == zlib_mode::gzip || m == zlib_mode::deflate_raw;
}

// Node: ZlibStrerror(), the code of err.code.
const char* zlib_code_name(int err) noexcept {
  switch (err) {
    case Z_NEED_DICT: return "Z_NEED_DICT";
    case Z_ERRNO: return "Z_ERRNO";
    case Z_STREAM_ERROR: return "Z_STREAM_ERROR";
    case Z_DATA_ERROR: return "Z_DATA_ERROR";
    case Z_MEM_ERROR: return "Z_MEM_ERROR";
    case Z_BUF_ERROR: return "Z_BUF_ERROR";
    case Z_VERSION_ERROR: return "Z_VERSION_ERROR";
    default: return "Z_UNKNOWN_ERROR";
  }
}

int zlib_flush_flag(detail::codec_op op, flush_kind kind) noexcept {
  if (op == detail::codec_op::finish) return Z_FINISH;
  if (op == detail::codec_op::process) return Z_NO_FLUSH;
  switch (kind) {
    case flush_kind::none: return Z_NO_FLUSH;
    case flush_kind::partial: return Z_PARTIAL_FLUSH;
    case flush_kind::sync: return Z_SYNC_FLUSH;
    case flush_kind::full: return Z_FULL_FLUSH;
    case flush_kind::block: return Z_BLOCK;
  }
  return Z_NO_FLUSH;
}

void check(const char* name, int v, int lo, int hi) {
  if (v < lo || v > hi) detail::throw_option_out_of_range(name, v, lo, hi);
}

class zlib_codec final : public detail::codec {
 public:
  zlib_codec(zlib_mode mode, const zlib_options& o) : mode_(mode) {
    // Node's Zlib constructor: checkRangesOrGetDefault for each option.
    check("windowBits", o.window_bits, compresses(mode) ? 9 : 8, 15);
    check("level", o.level, -1, 9);
    check("memLevel", o.mem_level, 1, 9);
    check("strategy", o.strategy, 0, 4);
    if (o.chunk_size < 64) detail::throw_option_out_of_range("chunkSize", static_cast<long long>(o.chunk_size), 64, {});
    int bits = o.window_bits;
    if (mode == zlib_mode::gzip || mode == zlib_mode::gunzip) bits += 16;
    if (mode == zlib_mode::unzip) bits += 32;
    if (mode == zlib_mode::deflate_raw || mode == zlib_mode::inflate_raw) bits = -bits;
    const int err = compresses(mode) ? deflateInit2(&strm_, o.level, Z_DEFLATED, bits, o.mem_level, o.strategy)
                                     : inflateInit2(&strm_, bits);
    if (err != Z_OK) throw stream_error(make_zlib_error(zlib_code_name(err), err, "Init error"), "zlib");
  }
  ~zlib_codec() override {
    if (compresses(mode_))
      deflateEnd(&strm_);
    else
      inflateEnd(&strm_);
  }

  detail::codec_step step(std::span<const char> in, std::span<char> out, detail::codec_op op,
                          flush_kind kind) override {
    if (ended_) return {.consumed = in.size(), .produced = 0, .more = false, .ec = {}};  // past the end of the data: ignored, as in Node
    const int flush = zlib_flush_flag(op, kind);
    strm_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    strm_.avail_in = static_cast<uInt>(in.size());
    strm_.next_out = reinterpret_cast<Bytef*>(out.data());
    strm_.avail_out = static_cast<uInt>(out.size());
    note_header(in);

    int err;
    if (compresses(mode_)) {
      err = deflate(&strm_, flush);
    } else {
      err = inflate(&strm_, flush);
      // Node: bytes after a gzip member that are not zero padding are
      // another member (gzip -d's reading), or garbage that fails as one.
      while (err == Z_STREAM_END && gunzip_members() && strm_.avail_in > 0 && strm_.next_in[0] != 0) {
        inflateReset(&strm_);
        err = inflate(&strm_, flush);
      }
    }
    detail::codec_step s;
    s.consumed = in.size() - strm_.avail_in;
    s.produced = out.size() - strm_.avail_out;
    s.more = strm_.avail_out == 0;
    // Node: ZlibContext::GetErrorInfo() and CheckError().
    switch (err) {
      case Z_OK:
      case Z_BUF_ERROR:
        if (strm_.avail_out != 0 && flush == Z_FINISH) s.ec = error(err, "unexpected end of file");
        break;
      case Z_STREAM_END:
        if (!compresses(mode_)) {
          ended_ = true;
          s.consumed = in.size();
        }
        s.more = false;
        break;
      case Z_NEED_DICT:
        s.ec = error(err, "Missing dictionary");
        break;
      default:
        s.ec = error(err, "Zlib error");
        break;
    }
    return s;
  }

 private:
  // Node's error: zlib's own message when it gave one.
  std::error_code error(int err, const char* message) const {
    return make_zlib_error(zlib_code_name(err), err, strm_.msg ? strm_.msg : message);
  }

  // Unzip is gunzip when its input starts with gzip's magic (Node reads
  // the first two bytes so).
  void note_header(std::span<const char> in) noexcept {
    for (std::size_t i = 0; header_seen_ < 2 && i < in.size(); ++i, ++header_seen_)
      header_[header_seen_] = static_cast<unsigned char>(in[i]);
  }
  bool gunzip_members() const noexcept {
    return mode_ == zlib_mode::gunzip || (mode_ == zlib_mode::unzip && header_[0] == 0x1f && header_[1] == 0x8b);
  }

  zlib_mode mode_;
  z_stream strm_{};
  bool ended_ = false;
  unsigned char header_[2] = {};
  std::size_t header_seen_ = 0;
};

std::unique_ptr<zlib_base> make(zlib_mode mode, const zlib_options& o) {
  // Node: _defaultFullFlushFlag is Z_FULL_FLUSH for every zlib stream.
  return std::make_unique<zlib_base>(std::make_unique<zlib_codec>(mode, o), o.chunk_size, flush_kind::full);
}

}  // namespace

std::unique_ptr<detail::codec> detail::make_gzip_codec(int level) {
  return std::make_unique<zlib_codec>(zlib_mode::gzip, zlib_options{.level = level});
}
std::unique_ptr<detail::codec> detail::make_gunzip_codec() {
  return std::make_unique<zlib_codec>(zlib_mode::gunzip, zlib_options{});
}

std::unique_ptr<zlib_base> create_gzip(const zlib_options& o) { return make(zlib_mode::gzip, o); }
std::unique_ptr<zlib_base> create_gunzip(const zlib_options& o) { return make(zlib_mode::gunzip, o); }
std::unique_ptr<zlib_base> create_deflate(const zlib_options& o) { return make(zlib_mode::deflate, o); }
std::unique_ptr<zlib_base> create_inflate(const zlib_options& o) { return make(zlib_mode::inflate, o); }
std::unique_ptr<zlib_base> create_deflate_raw(const zlib_options& o) { return make(zlib_mode::deflate_raw, o); }
std::unique_ptr<zlib_base> create_inflate_raw(const zlib_options& o) { return make(zlib_mode::inflate_raw, o); }
std::unique_ptr<zlib_base> create_unzip(const zlib_options& o) { return make(zlib_mode::unzip, o); }

}  // namespace sluice
