// spool_segment: the format of a spool's segment files, the append-only
// files in which a spool_writable keeps records until they are sent. Only
// the format lives here (names, headers, records, their checksum); the
// files are written by spool_writer and read back by spool_reader.
//
// A segment: a 16-byte header, the magic "SLSPOOL1" and the segment's
// sequence number (little-endian u64), then records back to back. A record:
// its payload length (u32, little-endian), a CRC-32C (Castagnoli) of those
// four length bytes followed by the payload (u32), then the payload. The
// checksum covers the length too, so that a length torn or overwritten is
// caught as surely as a torn payload: a record is accepted only whole and
// intact, and the first one that is not ends the segment (after a SIGKILL
// or a power loss, the tail of the last segment written may be torn).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::detail {

inline constexpr std::size_t segment_header_size = 16;
inline constexpr std::size_t record_header_size = 8;
/// The longest payload a record holds: a longer length is taken as garbage.
inline constexpr std::uint32_t max_record_payload = 1u << 30;

/// CRC-32C of `n` bytes, continuing from `crc` (0 to start).
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0) noexcept;

/// "seg-00000000000000000042": the name of segment 42 in the spool's DIR.
/// Zero-padded so that a listing sorts like the numbers.
std::string segment_name(std::uint64_t seq);
/// The number of a segment's file name; false for any other name.
bool parse_segment_name(std::string_view name, std::uint64_t& seq) noexcept;

/// Appends the header of segment `seq` to `out`.
void append_segment_header(std::string& out, std::uint64_t seq);
/// Whether `header` (segment_header_size bytes) is that of segment `seq`.
bool check_segment_header(std::string_view header, std::uint64_t seq) noexcept;

/// Appends one record (its header and `payload`) to `out`.
void append_record(std::string& out, std::string_view payload);

enum class record_status {
  ok,         // a whole, intact record: `payload` and `used` are set
  need_more,  // `buf` ends inside a record (or is empty)
  bad,        // a length past max_record_payload, or a checksum that does not match
};

/// The first record of `buf`. `used` is its size with its header.
record_status parse_record(std::string_view buf, std::string_view& payload, std::size_t& used) noexcept;

}  // namespace sluice::detail
