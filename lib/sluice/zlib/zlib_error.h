// zlib_error: the errors of the compressing and decompressing transforms as
// std::error_code, carrying what Node's zlib errors carry: a code
// ("Z_DATA_ERROR", "ZSTD_error_prefix_unknown"), an errno (-3, 10) and the
// library's message ("incorrect header check", "Unknown frame descriptor").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace sluice {

/// The category of zlib's and zstd's errors; its name() is "sluice.zlib".
/// message() is Node's err.message, code_name() Node's err.code.
const std::error_category& zlib_category() noexcept;

/// An error as Node's zlib makes it: `code` is err.code, `errno_value`
/// err.errno, `message` err.message. Equal triples give equal codes; they
/// are interned for the life of the process (the libraries have few).
///
///     auto ec = sluice::make_zlib_error("Z_DATA_ERROR", -3, "incorrect header check");
///     sluice::code_name(ec);   // "Z_DATA_ERROR"
///     sluice::zlib_errno(ec);  // -3
std::error_code make_zlib_error(std::string_view code, int errno_value, std::string_view message);

/// Node's err.errno of an error of zlib_category(); 0 for any other error.
int zlib_errno(const std::error_code& ec);

namespace detail {
/// Node's RangeError for an option out of its range (ERR_OUT_OF_RANGE,
/// errc::out_of_range): a stream_error whose what() is Node's message alone,
/// 'The value of "options.NAME" is out of range. It must be >= MIN and <=
/// MAX. Received GOT' (no "and <= MAX" for an option without a maximum).
/// Thrown from the codecs' constructors, as Node's throw from the Zlib one.
[[noreturn]] void throw_option_out_of_range(std::string_view option, long long got, long long min,
                                            std::optional<long long> max);
}  // namespace detail

}  // namespace sluice
