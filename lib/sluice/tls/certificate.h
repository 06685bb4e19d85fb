// certificate: what Node's tlsSocket.getPeerCertificate() tells of a peer.
#pragma once

#include <string>

namespace sluice::tls {

/// A peer's certificate, as Node's getPeerCertificate() describes it, each
/// field a string. Differs from Node: `subject` and `issuer` are one string
/// each in OpenSSL's RFC 2253 form ("CN=localhost,O=sluice test"), where Node
/// gives an object ({ CN: 'localhost', O: 'sluice test' }).
struct certificate {
  std::string subject;
  std::string issuer;
  /// Node's subjectaltname: "DNS:localhost, IP Address:127.0.0.1".
  std::string subjectaltname;
  /// Node's valid_from / valid_to: "Dec  2 01:00:00 2026 GMT".
  std::string valid_from;
  std::string valid_to;
  /// Node's serialNumber: upper-case hex.
  std::string serial_number;
  /// Node's fingerprint256: the SHA-256 of the DER, "AB:CD:...".
  std::string fingerprint256;
};

}  // namespace sluice::tls
