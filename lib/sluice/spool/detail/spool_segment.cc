#include "sluice/spool/detail/spool_segment.h"

#include <array>
#include <cstring>

namespace sluice::detail {

namespace {

// The table of the reflected Castagnoli polynomial 0x82F63B78, one byte at a
// time: fast enough next to the write and read of the bytes it covers.
constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> crc_table = make_crc_table();

constexpr char magic[8] = {'S', 'L', 'S', 'P', 'O', 'O', 'L', '1'};

void put_u32(char* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(char* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t get_u32(const char* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
std::uint64_t get_u64(const char* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::uint32_t crc32c_table(const unsigned char* p, std::size_t n, std::uint32_t crc) noexcept {
  for (std::size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// SSE 4.2's crc32 instruction computes this very CRC (Castagnoli), 8 bytes
// an instruction: the spool checksums every byte twice (written, read back).
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const unsigned char* p, std::size_t n,
                                                              std::uint32_t crc) noexcept {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n-- != 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
const bool have_sse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (have_sse42) return ~crc32c_sse42(p, n, ~crc);
#endif
  return ~crc32c_table(p, n, ~crc);
}


std::string segment_name(std::uint64_t seq) {
  std::string digits = std::to_string(seq);
  return "seg-" + std::string(20 - digits.size(), '0') + digits;
}

bool parse_segment_name(std::string_view name, std::uint64_t& seq) noexcept {
  if (name.size() != 24 || name.substr(0, 4) != "seg-") return false;
  std::uint64_t v = 0;
  for (char c : name.substr(4)) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  seq = v;
  return true;
}

void append_segment_header(std::string& out, std::uint64_t seq) {
  char h[segment_header_size];
  std::memcpy(h, magic, sizeof magic);
  put_u64(h + 8, seq);
  out.append(h, sizeof h);
}

bool check_segment_header(std::string_view header, std::uint64_t seq) noexcept {
  return header.size() >= segment_header_size && std::memcmp(header.data(), magic, sizeof magic) == 0 &&
         get_u64(header.data() + 8) == seq;
}

void append_record(std::string& out, std::string_view payload) {
  char h[record_header_size];
  put_u32(h, static_cast<std::uint32_t>(payload.size()));
  std::uint32_t crc = crc32c(h, 4);
  crc = crc32c(payload.data(), payload.size(), crc);
  put_u32(h + 4, crc);
  out.append(h, sizeof h);
  out.append(payload);
}

record_status parse_record(std::string_view buf, std::string_view& payload, std::size_t& used) noexcept {
  if (buf.size() < record_header_size) return record_status::need_more;
  const std::uint32_t len = get_u32(buf.data());
  if (len > max_record_payload) return record_status::bad;
  if (buf.size() - record_header_size < len) return record_status::need_more;
  std::uint32_t crc = crc32c(buf.data(), 4);
  crc = crc32c(buf.data() + record_header_size, len, crc);
  if (crc != get_u32(buf.data() + 4)) return record_status::bad;
  payload = buf.substr(record_header_size, len);
  used = record_header_size + len;
  return record_status::ok;
}

}  // namespace sluice::detail
