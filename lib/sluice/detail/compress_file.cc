#include "sluice/detail/compress_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "sluice/base/detail/syscalls.h"

#ifdef SLUICE_HAS_ZLIB
#include <zlib.h>
#endif
#ifdef SLUICE_HAS_ZSTD
#include <zstd.h>
#endif

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

namespace detail {
namespace {

constexpr std::size_t buffer_size = 256 * 1024;

std::error_code last_error() noexcept { return {errno, std::system_category()}; }

// read(2) of up to n bytes, EINTR retried; -1 on error.
ssize_t read_some(int fd, char* p, std::size_t n) noexcept {
  ssize_t r;
  do {
    r = ::read(fd, p, n);
  } while (r < 0 && errno == EINTR);
  return r;
}

std::error_code write_all(int fd, const char* p, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t r = sys.write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return last_error();
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return {};
}

#ifdef SLUICE_HAS_ZLIB
std::error_code gzip_file(int in_fd, int out_fd, int level) noexcept {
  z_stream s{};
  if (deflateInit2(&s, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return std::make_error_code(std::errc::not_enough_memory);
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&s, deflateEnd);
  std::vector<char> in(buffer_size), out(buffer_size);
  for (;;) {
    const ssize_t n = read_some(in_fd, in.data(), in.size());
    if (n < 0) return last_error();
    const int flush = n == 0 ? Z_FINISH : Z_NO_FLUSH;
    s.next_in = reinterpret_cast<Bytef*>(in.data());
    s.avail_in = static_cast<uInt>(n);
    int err;
    do {
      s.next_out = reinterpret_cast<Bytef*>(out.data());
      s.avail_out = static_cast<uInt>(out.size());
      err = deflate(&s, flush);
      if (err == Z_STREAM_ERROR) return std::make_error_code(std::errc::io_error);
      if (const std::error_code ec = write_all(out_fd, out.data(), out.size() - s.avail_out)) return ec;
    } while (s.avail_out == 0);
    if (err == Z_STREAM_END) return {};
  }
}
#endif

#ifdef SLUICE_HAS_ZSTD
std::error_code zstd_file(int in_fd, int out_fd, int level) noexcept {
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return std::make_error_code(std::errc::not_enough_memory);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level ? level : ZSTD_CLEVEL_DEFAULT);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<char> in(buffer_size), out(buffer_size);
  for (;;) {
    const ssize_t n = read_some(in_fd, in.data(), in.size());
    if (n < 0) return last_error();
    const ZSTD_EndDirective mode = n == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer ib{in.data(), static_cast<std::size_t>(n), 0};
    std::size_t left;
    do {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      left = ZSTD_compressStream2(cctx.get(), &ob, &ib, mode);
      if (ZSTD_isError(left)) return std::make_error_code(std::errc::io_error);
      if (const std::error_code ec = write_all(out_fd, out.data(), ob.pos)) return ec;
    } while (mode == ZSTD_e_end ? left != 0 : ib.pos < ib.size);
    if (mode == ZSTD_e_end) return {};
  }
}
#endif

// Compares what a decompressor gives with the plain file's next bytes.
struct plain_reader {
  int fd;
  std::vector<char> buf = std::vector<char>(buffer_size);
  std::error_code ec{};
  // False at the first difference (or a read error, kept in ec).
  bool match(const char* p, std::size_t n) noexcept {
    while (n > 0) {
      const ssize_t r = read_some(fd, buf.data(), std::min(n, buf.size()));
      if (r < 0) ec = last_error();
      if (r <= 0) return false;
      if (std::memcmp(buf.data(), p, static_cast<std::size_t>(r)) != 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
  bool at_end() noexcept {
    char c;
    const ssize_t r = read_some(fd, &c, 1);
    if (r < 0) ec = last_error();
    return r == 0;
  }
};

#ifdef SLUICE_HAS_ZLIB
bool gzip_copy(int packed_fd, plain_reader& plain, std::error_code& ec) noexcept {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return false;
  }
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&s, inflateEnd);
  std::vector<char> in(buffer_size), out(buffer_size);
  bool eof = false;
  for (;;) {
    if (s.avail_in == 0 && !eof) {
      const ssize_t n = read_some(packed_fd, in.data(), in.size());
      if (n < 0) {
        ec = last_error();
        return false;
      }
      eof = n == 0;
      s.next_in = reinterpret_cast<Bytef*>(in.data());
      s.avail_in = static_cast<uInt>(n);
    }
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    const int err = inflate(&s, Z_NO_FLUSH);
    if (err != Z_OK && err != Z_STREAM_END && err != Z_BUF_ERROR) return false;
    const std::size_t produced = out.size() - s.avail_out;
    if (!plain.match(out.data(), produced)) return false;
    if (err == Z_STREAM_END) {
      // One member, as compress_file() writes it, and nothing after it.
      char c;
      return s.avail_in == 0 && read_some(packed_fd, &c, 1) == 0 && plain.at_end();
    }
    if (eof && s.avail_in == 0 && produced == 0) return false;  // cut short: the stream did not end
  }
}
#endif

#ifdef SLUICE_HAS_ZSTD
bool zstd_copy(int packed_fd, plain_reader& plain, std::error_code& ec) noexcept {
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return false;
  }
  std::vector<char> in(buffer_size), out(buffer_size);
  ZSTD_inBuffer ib{in.data(), 0, 0};
  bool eof = false;
  for (;;) {
    if (ib.pos == ib.size && !eof) {
      const ssize_t n = read_some(packed_fd, in.data(), in.size());
      if (n < 0) {
        ec = last_error();
        return false;
      }
      eof = n == 0;
      ib = {in.data(), static_cast<std::size_t>(n), 0};
    }
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    const std::size_t left = ZSTD_decompressStream(dctx.get(), &ob, &ib);
    if (ZSTD_isError(left)) return false;
    if (!plain.match(out.data(), ob.pos)) return false;
    if (left == 0) {
      // The frame is whole and flushed: one frame, as compress_file()
      // writes it, and nothing after it.
      char c;
      return ib.pos == ib.size && read_some(packed_fd, &c, 1) == 0 && plain.at_end();
    }
    if (eof && ib.pos == ib.size && ob.pos == 0) return false;  // cut short
  }
}
#endif

}  // namespace

std::string_view compression_suffix(log_options::compression c) noexcept {
  switch (c) {
    case log_options::compression::gzip: return ".gz";
    case log_options::compression::zstd: return ".zst";
    default: return "";
  }
}

std::error_code compress_file(int in_fd, int out_fd, log_options::compression c, int level) noexcept {
  switch (c) {
#ifdef SLUICE_HAS_ZLIB
    case log_options::compression::gzip: return gzip_file(in_fd, out_fd, level);
#endif
#ifdef SLUICE_HAS_ZSTD
    case log_options::compression::zstd: return zstd_file(in_fd, out_fd, level);
#endif
    default: return std::make_error_code(std::errc::operation_not_supported);
  }
}

std::error_code is_compressed_copy(int packed_fd, int plain_fd, log_options::compression c, bool& same) noexcept {
  same = false;
  if (::lseek(packed_fd, 0, SEEK_SET) < 0 || ::lseek(plain_fd, 0, SEEK_SET) < 0) return last_error();
  plain_reader plain{plain_fd};
  std::error_code ec{};
  switch (c) {
#ifdef SLUICE_HAS_ZLIB
    case log_options::compression::gzip: same = gzip_copy(packed_fd, plain, ec); break;
#endif
#ifdef SLUICE_HAS_ZSTD
    case log_options::compression::zstd: same = zstd_copy(packed_fd, plain, ec); break;
#endif
    default: return std::make_error_code(std::errc::operation_not_supported);
  }
  if (!ec) ec = plain.ec;
  if (ec) same = false;
  return ec;
}

}  // namespace detail
}  // namespace sluice
