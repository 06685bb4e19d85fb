// certificate_of: a tls::certificate from OpenSSL's X509, the fields Node's
// getPeerCertificate() gives. Internal to tls/ (never installed): socket.cc's
// peer_certificate() uses it.
#pragma once

#include "sluice/tls/certificate.h"

struct x509_st;

namespace sluice::tls::detail {

// The certificate's fields as Node's strings; `cert` stays the caller's.
certificate certificate_of(x509_st* cert);

}  // namespace sluice::tls::detail
