#include "sluice/detail/compress_file.h"

#include <unistd.h>

#include "sluice/detail/syscalls.h"

#include <cerrno>
#include <memory>
#include <vector>

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

}  // namespace detail
}  // namespace sluice
