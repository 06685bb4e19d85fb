#include "sluice/log_file/detail/compress_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "sluice/base/detail/syscalls.h"
#include "sluice/zlib/detail/codecs.h"

namespace sluice {

namespace detail {
namespace {

constexpr std::size_t buffer_size = 256 * 1024;

// read(2) of up to n bytes, EINTR retried; -1 on error.
ssize_t read_some(int fd, char* p, std::size_t n) noexcept {
  ssize_t r;
  do {
    r = ::read(fd, p, n);
  } while (r < 0 && errno == EINTR);
  return r;
}

// The codec of `c`, the compressing one (at `level`; 0, log_options' "the
// codec's default", is zlib's -1 and zstd's 3) or the one that reads it
// back; null (and `ec` set) when it cannot be made or this build lacks it.
std::unique_ptr<codec> make_codec(log_options::compression c, bool compress, int level,
                                  std::error_code& ec) noexcept {
  try {
    switch (c) {
#ifdef SLUICE_HAS_ZLIB
      case log_options::compression::gzip: return compress ? make_gzip_codec(level ? level : -1) : make_gunzip_codec();
#endif
#ifdef SLUICE_HAS_ZSTD
      case log_options::compression::zstd:
        return compress ? make_zstd_compress_codec(level ? level : 3) : make_zstd_decompress_codec();
#endif
      default: ec = std::make_error_code(std::errc::operation_not_supported); return nullptr;
    }
  } catch (const std::system_error& e) {
    ec = e.code();
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

// Runs in_fd's bytes, read to its end, through `c` until the codec has finished (after the
// last read, of 0 bytes), giving each step's output to `give`, which says
// whether to go on. Returns the read's error or the codec's; `stopped` is
// set when `give` said no, or the codec made no progress.
template <class Give>
std::error_code run_codec(codec& c, int in_fd, Give give, bool& stopped) noexcept {
  std::vector<char> in(buffer_size), out(buffer_size);
  stopped = false;
  for (;;) {
    const ssize_t n = read_some(in_fd, in.data(), in.size());
    if (n < 0) return last_error();
    const codec_op op = n == 0 ? codec_op::finish : codec_op::process;
    std::span<const char> left(in.data(), static_cast<std::size_t>(n));
    codec_step s;
    do {
      s = c.step(left, out, op, flush_kind::none);
      if (s.ec) return s.ec;
      // A step that takes none of the input left and gives nothing would
      // be taken again forever.
      if (!give(out.data(), s.produced) || (!left.empty() && s.consumed == 0 && s.produced == 0 && !s.more)) {
        stopped = true;
        return {};
      }
      left = left.subspan(s.consumed);
    } while (s.more || !left.empty());
    if (n == 0) return {};
  }
}

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

}  // namespace

std::string_view compression_suffix(log_options::compression c) noexcept {
  switch (c) {
    case log_options::compression::gzip: return ".gz";
    case log_options::compression::zstd: return ".zst";
    default: return "";
  }
}

std::error_code compress_file(int in_fd, int out_fd, log_options::compression c, int level) noexcept {
  std::error_code ec;
  const std::unique_ptr<codec> packer = make_codec(c, true, level, ec);
  if (!packer) return ec;
  std::error_code written;
  bool stopped = false;
  ec = run_codec(*packer, in_fd, [&](const char* p, std::size_t n) {
    written = write_fully(out_fd, p, n);
    return !written;
  }, stopped);
  if (!ec && stopped && !written) ec = std::make_error_code(std::errc::io_error);  // the codec made no progress
  return ec ? ec : written;
}

// The codec reads a member or frame to its end and fails on a stream cut
// short (at its finish step); what follows the end is read as another member
// or frame, as gzip -d and zstd -d read it, so trailing garbage fails (gzip's
// zero padding is skipped, as gzip -d skips it); and every byte it gives
// must be the plain file's next.
std::error_code is_compressed_copy(int packed_fd, int plain_fd, log_options::compression c, bool& same) noexcept {
  same = false;
  if (::lseek(packed_fd, 0, SEEK_SET) < 0 || ::lseek(plain_fd, 0, SEEK_SET) < 0) return last_error();
  std::error_code ec;
  const std::unique_ptr<codec> unpacker = make_codec(c, false, 0, ec);
  if (!unpacker) return ec;
  struct stat st {};
  if (::fstat(packed_fd, &st) != 0) return last_error();
  if (st.st_size == 0) return {};  // no stream at all: not a copy, even of an empty file
  plain_reader plain{plain_fd};
  bool stopped = false;
  ec = run_codec(*unpacker, packed_fd, [&](const char* p, std::size_t n) { return plain.match(p, n); }, stopped);
  // A codec's error is a file that is not a copy; a read's is an error.
  if (ec && ec.category() != std::system_category() && ec.category() != std::generic_category()) ec.clear();
  else if (!ec && !stopped) same = plain.at_end();
  if (!ec) ec = plain.ec;
  if (ec) same = false;
  return ec;
}

}  // namespace detail
}  // namespace sluice
