// certificate_of: OpenSSL's X509 as Node's strings (certificate_of.h).
#include "sluice/tls/detail/certificate_of.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <openssl/bio.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <string>

namespace sluice::tls::detail {

namespace {

std::string bio_text(BIO* b) {
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  return n > 0 ? std::string(p, static_cast<std::size_t>(n)) : std::string();
}

std::string name_text(X509_NAME* name) {
  BIO* b = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  std::string s = bio_text(b);
  BIO_free(b);
  return s;
}

std::string time_text(const ASN1_TIME* t) {
  BIO* b = BIO_new(BIO_s_mem());
  ASN1_TIME_print(b, t);
  std::string s = bio_text(b);
  BIO_free(b);
  return s;
}

}  // namespace

certificate certificate_of(X509* cert) {
  certificate c;
  c.subject = name_text(X509_get_subject_name(cert));
  c.issuer = name_text(X509_get_issuer_name(cert));
  c.valid_from = time_text(X509_get0_notBefore(cert));
  c.valid_to = time_text(X509_get0_notAfter(cert));
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    char* hex = BN_bn2hex(bn);
    c.serial_number = hex;
    OPENSSL_free(hex);
    BN_free(bn);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  X509_digest(cert, EVP_sha256(), md, &len);
  for (unsigned i = 0; i < len; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, i ? ":%02X" : "%02X", md[i]);
    c.fingerprint256 += b;
  }
  // Node's subjectaltname: "DNS:a, IP Address:1.2.3.4".
  if (auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
      std::string item;
      if (g->type == GEN_DNS) {
        item = "DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                                    static_cast<std::size_t>(ASN1_STRING_length(g->d.dNSName)));
      } else if (g->type == GEN_IPADD) {
        char text[INET6_ADDRSTRLEN] = {};
        const int l = ASN1_STRING_length(g->d.iPAddress);
        inet_ntop(l == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress), text, sizeof text);
        item = std::string("IP Address:") + text;
      } else {
        continue;
      }
      if (!c.subjectaltname.empty()) c.subjectaltname += ", ";
      c.subjectaltname += item;
    }
    GENERAL_NAMES_free(names);
  }
  return c;
}

}  // namespace sluice::tls::detail
