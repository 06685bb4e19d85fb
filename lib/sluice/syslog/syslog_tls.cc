// syslog_tls: the syslog writable's wrap hook, a tls::socket over each
// connection, sharing one loaded context.
#include "sluice/syslog/syslog_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/net/socket.h"
#include "sluice/tls/context.h"
#include "sluice/tls/tls_error.h"

namespace sluice::tls {

namespace {
// Both writables' options take the same two hooks.
template <class Options>
void set_hooks(Options& o, const socket_options& tls) {
  socket_options so = tls;
  if (!so.secure_context) so.secure_context = context::make(so.context, false);
  // The name to verify: servername, else the host connected to (a name, or
  // an IP address the certificate must list).
  const std::string host = o.host;
  o.wrap = [so = std::move(so), host](std::unique_ptr<net::socket> tcp) -> std::unique_ptr<duplex> {
    return std::make_unique<socket>(std::move(tcp), host, so);
  };
  o.fatal_error = [](std::error_code ec) { return is_certificate_error(ec); };
}
}  // namespace

void use_tls(syslog_options& o, const socket_options& tls) { set_hooks(o, tls); }
void use_tls(relp_options& o, const socket_options& tls) { set_hooks(o, tls); }

bool is_certificate_error(std::error_code ec) noexcept {
  if (ec == make_error_code(errc::tls_cert_altname_invalid)) return true;
  if (ec.category() != tls_category()) return false;
  // Below 2^23: a verification result (see tls_error.h).
  constexpr int queue_shift = 23;
  if (ec.value() < (1 << queue_shift)) return true;
  if ((ec.value() >> queue_shift) != ERR_LIB_SSL) return false;
  switch (ec.value() & ((1 << queue_shift) - 1)) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return true;
    default:
      return false;
  }
}

}  // namespace sluice::tls
