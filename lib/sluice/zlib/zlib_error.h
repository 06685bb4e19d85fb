// zlib_error: the errors of the compressing and decompressing transforms as
// std::error_code, carrying what Node's zlib errors carry: a code
// ("Z_DATA_ERROR", "ZSTD_error_prefix_unknown"), an errno (-3, 10) and the
// library's message ("incorrect header check", "Unknown frame descriptor").
#pragma once

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

}  // namespace sluice
