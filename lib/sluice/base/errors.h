// Stream errors: one table gives each error its enumerator, Node's code and
// Node's message, so traces and messages can never drift apart.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace sluice {

// X(enumerator, Node's code, Node's message)
#define SLUICE_STREAM_ERRORS(X)                                                              \
  X(write_after_end, "ERR_STREAM_WRITE_AFTER_END", "write after end")                       \
  X(destroyed, "ERR_STREAM_DESTROYED", "Cannot call write after a stream was destroyed")    \
  X(already_finished, "ERR_STREAM_ALREADY_FINISHED",                                         \
    "Cannot call end after a stream was finished")                                           \
  X(multiple_callback, "ERR_MULTIPLE_CALLBACK", "Callback called multiple times")           \
  X(null_values, "ERR_STREAM_NULL_VALUES", "May not write null values to stream")           \
  X(invalid_high_water_mark, "ERR_INVALID_ARG_VALUE", "The value of highWaterMark is invalid") \
  X(push_after_eof, "ERR_STREAM_PUSH_AFTER_EOF", "stream.push() after EOF")                  \
  X(unshift_after_end, "ERR_STREAM_UNSHIFT_AFTER_END_EVENT", "stream.unshift() after end event") \
  X(premature_close, "ERR_STREAM_PREMATURE_CLOSE", "Premature close")                        \
  X(cannot_pipe, "ERR_STREAM_CANNOT_PIPE", "Cannot pipe, not readable")                      \
  X(method_not_implemented, "ERR_METHOD_NOT_IMPLEMENTED", "The method is not implemented")  \
  X(out_of_range, "ERR_OUT_OF_RANGE", "The value of \"size\" is out of range. It must be <= 1GiB") \
  X(line_too_long, "ERR_SLUICE_LINE_TOO_LONG", "line longer than the configured maximum") \
  X(missing_args, "ERR_MISSING_ARGS", "The \"streams\" argument must be specified")             \
  X(reduce_empty, "ERR_MISSING_ARGS", "Reduce of an empty stream requires an initial value")   \
  X(aborted, "ABORT_ERR", "The operation was aborted")                                         \
  X(invalid_arg_type, "ERR_INVALID_ARG_TYPE",                                                 \
    "The \"streams\" argument must be readable before the last stream and writable after the first") \
  X(buffer_full, "ERR_SLUICE_BUFFER_FULL", "write refused: the stream holds max_buffered already") \
  X(write_timeout, "ERR_SLUICE_WRITE_TIMEOUT", "the socket's written data did not drain within its write deadline") \
  X(socket_closed_before_connection, "ERR_SOCKET_CLOSED_BEFORE_CONNECTION",                    \
    "Socket closed before the connection was established")                                   \
  X(socket_closed, "ERR_SOCKET_CLOSED", "Socket is closed")                                   \
  X(server_not_running, "ERR_SERVER_NOT_RUNNING", "Server is not running.")                 \
  X(tls_cert_altname_invalid, "ERR_TLS_CERT_ALTNAME_INVALID",                                 \
    "Hostname/IP does not match certificate's altnames")                                      \
  X(tls_handshake_timeout, "ERR_TLS_HANDSHAKE_TIMEOUT", "TLS handshake timeout")             \
  X(compose_not_readable, "ERR_INVALID_ARG_VALUE",                                           \
    "The argument 'streams' is invalid: every stream but the last must be readable")         \
  X(compose_not_writable, "ERR_INVALID_ARG_VALUE",                                           \
    "The argument 'streams' is invalid: every stream but the first must be writable")        \
  X(tls_too_many_handshakes, "ERR_SLUICE_TLS_TOO_MANY_HANDSHAKES",                            \
    "TLS handshake cut off: too many connections in their handshake, this one the oldest")

/// Errors a stream reports through callbacks and the `error` event.
/// Zero is success, as for every error_code.
enum class errc : int {
#define SLUICE_X(name, code, message) name,
  ok_ = 0,
  SLUICE_STREAM_ERRORS(SLUICE_X)
#undef SLUICE_X
};

/// The category of sluice's own stream errors; its name() is "sluice.stream".
const std::error_category& stream_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), stream_category()};
}

/// A category whose errors have a code of their own besides their message,
/// as Node's errors have `code` and `message` (zlib's "Z_DATA_ERROR"; a failed
/// lookup's "ENOTFOUND", its message "getaddrinfo ENOTFOUND example.invalid";
/// OpenSSL's "UNABLE_TO_VERIFY_LEAF_SIGNATURE").
/// A layer above declares one; code_name() asks it, so that this layer needs
/// to know none of them.
class coded_error_category : public std::error_category {
 public:
  virtual std::string code(int value) const = 0;
};

/// The name a trace prints for an error: Node's `ERR_*` code for stream
/// errors, the errno name (`EPIPE`, `ENOSPC`, ...) for system errors, the
/// code of a coded_error_category, else the message. Example: code_name(make_error_code(errc::write_after_end)) is
/// "ERR_STREAM_WRITE_AFTER_END".
std::string code_name(const std::error_code& ec);

/// An error that carries a message of the caller's choosing, for sinks whose
/// failures are not errno values (and for scenarios: `complete w error=disk-full`).
/// Equal messages give equal codes; the message is interned for the life of
/// the process, so make few distinct ones. code_name() and message() return it.
std::error_code user_error(std::string_view message);

/// Thrown only where Node throws synchronously (invalid options) and when
/// opening a file fails; every other error travels as a std::error_code.
class stream_error : public std::system_error {
 public:
  using std::system_error::system_error;
};

}  // namespace sluice

template <>
struct std::is_error_code_enum<sluice::errc> : std::true_type {};
