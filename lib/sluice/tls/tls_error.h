// tls_error: OpenSSL's errors as std::error_code, with Node's codes for them,
// so that they reach write callbacks and 'error' as every stream error does.
#pragma once

#include <system_error>

namespace sluice::tls {

/// The category of OpenSSL's errors; its name() is "openssl". Two kinds of
/// value live in it:
///  - a certificate verification result (X509_V_ERR_*, below 2^23): code_name()
///    gives Node's code ("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "CERT_HAS_EXPIRED",
///    "DEPTH_ZERO_SELF_SIGNED_CERT"), message() OpenSSL's text ("unable to
///    verify the first certificate");
///  - an error of OpenSSL's error queue (library and reason): code_name() gives
///    Node's "ERR_SSL_<REASON>" ("ERR_SSL_WRONG_VERSION_NUMBER") or
///    "ERR_OSSL_<LIB>_<REASON>", message() OpenSSL's reason ("wrong version
///    number", "tlsv13 alert certificate required").
const std::error_category& tls_category() noexcept;

/// A verification result of SSL_get_verify_result(); X509_V_OK gives no error.
std::error_code make_verify_error(long result) noexcept;

/// The oldest error on this thread's OpenSSL error queue, which is then
/// cleared; `fallback` when the queue is empty.
std::error_code take_openssl_error(std::error_code fallback = {}) noexcept;

}  // namespace sluice::tls
