#include "sluice/tls/tls_error.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <cctype>
#include <string>

#include "sluice/base/errors.h"

namespace sluice::tls {
namespace {

// A queue error is packed as (library << 23) | reason, above every
// verification result (OpenSSL's reasons have 23 bits, its libraries fewer
// than 256): one int, both kinds in one category.
constexpr int queue_shift = 23;

// Node's names for the verification results (src/crypto/crypto_common.cc,
// X509ErrorCode): OpenSSL's X509_V_ERR_* without the prefix.
const char* verify_code(int v) noexcept {
  switch (v) {
#define SLUICE_V(name) \
  case X509_V_ERR_##name: \
    return #name;
    SLUICE_V(UNABLE_TO_GET_ISSUER_CERT)
    SLUICE_V(UNABLE_TO_GET_CRL)
    SLUICE_V(UNABLE_TO_DECRYPT_CERT_SIGNATURE)
    SLUICE_V(UNABLE_TO_DECRYPT_CRL_SIGNATURE)
    SLUICE_V(UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY)
    SLUICE_V(CERT_SIGNATURE_FAILURE)
    SLUICE_V(CRL_SIGNATURE_FAILURE)
    SLUICE_V(CERT_NOT_YET_VALID)
    SLUICE_V(CERT_HAS_EXPIRED)
    SLUICE_V(CRL_NOT_YET_VALID)
    SLUICE_V(CRL_HAS_EXPIRED)
    SLUICE_V(ERROR_IN_CERT_NOT_BEFORE_FIELD)
    SLUICE_V(ERROR_IN_CERT_NOT_AFTER_FIELD)
    SLUICE_V(ERROR_IN_CRL_LAST_UPDATE_FIELD)
    SLUICE_V(ERROR_IN_CRL_NEXT_UPDATE_FIELD)
    SLUICE_V(OUT_OF_MEM)
    SLUICE_V(DEPTH_ZERO_SELF_SIGNED_CERT)
    SLUICE_V(SELF_SIGNED_CERT_IN_CHAIN)
    SLUICE_V(UNABLE_TO_GET_ISSUER_CERT_LOCALLY)
    SLUICE_V(UNABLE_TO_VERIFY_LEAF_SIGNATURE)
    SLUICE_V(CERT_CHAIN_TOO_LONG)
    SLUICE_V(CERT_REVOKED)
    SLUICE_V(INVALID_CA)
    SLUICE_V(PATH_LENGTH_EXCEEDED)
    SLUICE_V(INVALID_PURPOSE)
    SLUICE_V(CERT_UNTRUSTED)
    SLUICE_V(CERT_REJECTED)
    SLUICE_V(HOSTNAME_MISMATCH)
#undef SLUICE_V
    default:
      return "UNSPECIFIED";
  }
}

// "wrong version number" -> "WRONG_VERSION_NUMBER", as Node spells its codes.
std::string upper_snake(const char* text) {
  std::string s;
  for (const char* p = text; p && *p; ++p)
    s += std::isalnum(static_cast<unsigned char>(*p)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : '_';
  return s;
}

class tls_category_impl final : public coded_error_category {
 public:
  const char* name() const noexcept override { return "openssl"; }
  std::string message(int value) const override {
    if (value < (1 << queue_shift)) return X509_verify_cert_error_string(value);
    const char* reason = ERR_reason_error_string(pack(value));
    return reason ? reason : "OpenSSL error " + std::to_string(value & ((1 << queue_shift) - 1));
  }
  // Node: the code of a verification error is its X509 name; a queue error
  // of the SSL library is ERR_SSL_<REASON>, of another ERR_OSSL_<LIB>_<REASON>
  // (node_crypto's ThrowCryptoError).
  std::string code(int value) const override {
    if (value < (1 << queue_shift)) return verify_code(value);
    const int lib = value >> queue_shift;
    const std::string reason = upper_snake(ERR_reason_error_string(pack(value)));
    if (lib == ERR_LIB_SSL) return "ERR_SSL_" + reason;
    // Node names the library by the first word of OpenSSL's name for it
    // ("x509 certificate routines": X509).
    const char* lib_name = ERR_lib_error_string(pack(value));
    std::string l = lib_name ? lib_name : "";
    l = upper_snake(l.substr(0, l.find(' ')).c_str());
    return "ERR_OSSL_" + l + "_" + reason;
  }

 private:
  static unsigned long pack(int value) noexcept {
    return ERR_PACK(value >> queue_shift, 0, value & ((1 << queue_shift) - 1));
  }
};

}  // namespace

const std::error_category& tls_category() noexcept {
  static const tls_category_impl category;
  return category;
}

std::error_code make_verify_error(long result) noexcept {
  if (result == X509_V_OK) return {};
  return {static_cast<int>(result), tls_category()};
}

std::error_code take_openssl_error(std::error_code fallback) noexcept {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  const int lib = ERR_GET_LIB(e);
  const int reason = ERR_GET_REASON(e);
  if (ERR_SYSTEM_ERROR(e)) return {reason, std::system_category()};
  return {(lib << queue_shift) | reason, tls_category()};
}

}  // namespace sluice::tls
