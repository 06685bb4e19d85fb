// Node: SecureContext (src/crypto/crypto_context.cc): setKey, setCert,
// addCACert, setMinProto, on one SSL_CTX.
#include "sluice/tls/context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>

#include "sluice/errors.h"
#include "sluice/tls/tls_error.h"

namespace sluice::tls {
namespace {

// The text of a PEM item given inline or as a file; empty when neither.
std::error_code pem_text(const std::string& text, const std::string& file, std::string& out) {
  if (!text.empty() && !file.empty()) return std::make_error_code(std::errc::invalid_argument);
  if (file.empty()) {
    out = text;
    return {};
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return {errno ? errno : ENOENT, std::system_category()};
  out.assign(std::istreambuf_iterator<char>(in), {});
  return {};
}

struct bio_deleter {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;
bio_ptr mem_bio(const std::string& s) { return bio_ptr(BIO_new_mem_buf(s.data(), static_cast<int>(s.size()))); }

// Node's setCert: the first certificate is ours, the rest its chain.
std::error_code use_cert_chain(SSL_CTX* ctx, const std::string& pem) {
  auto bio = mem_bio(pem);
  X509* leaf = PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr);
  if (!leaf) return take_openssl_error(std::make_error_code(std::errc::invalid_argument));
  const int ok = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (ok != 1) return take_openssl_error();
  while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
      X509_free(extra);
      return take_openssl_error();
    }
  }
  ERR_clear_error();  // the end of the PEM text reads as "no start line"
  return {};
}

std::error_code use_key(SSL_CTX* ctx, const std::string& pem) {
  auto bio = mem_bio(pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (!key) return take_openssl_error(std::make_error_code(std::errc::invalid_argument));
  const int ok = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (ok != 1) return take_openssl_error();
  if (SSL_CTX_check_private_key(ctx) != 1) return take_openssl_error();  // "key values mismatch"
  return {};
}

std::error_code add_ca(SSL_CTX* ctx, const std::string& pem, bool server) {
  auto bio = mem_bio(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  while (X509* ca = PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, ca);
    // Node: a server that asks for client certificates names these CAs in
    // its CertificateRequest.
    if (server) SSL_CTX_add_client_CA(ctx, ca);
    X509_free(ca);
    ++added;
  }
  if (added == 0) return take_openssl_error(std::make_error_code(std::errc::invalid_argument));
  ERR_clear_error();
  return {};
}

}  // namespace

context::~context() { SSL_CTX_free(ctx_); }

std::shared_ptr<context> context::make(const context_options& options, bool server) {
  std::error_code ec;
  auto c = make(options, server, ec);
  if (!c) throw stream_error(ec, "tls::context");
  return c;
}

std::shared_ptr<context> context::make(const context_options& o, bool server, std::error_code& ec) {
  ec.clear();
  SSL_CTX* raw = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!raw) {
    ec = take_openssl_error(std::make_error_code(std::errc::not_enough_memory));
    return nullptr;
  }
  std::shared_ptr<context> c(new context(raw, server));
  // A short write never happens on the socket's BIO (it takes every byte);
  // moving the buffer between retries is allowed because the sink keeps its
  // own copy.
  SSL_CTX_set_mode(raw, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const int min = o.min_version == "TLSv1.3" ? TLS1_3_VERSION : o.min_version == "TLSv1.2" ? TLS1_2_VERSION : 0;
  if (min == 0) {
    ec = std::make_error_code(std::errc::invalid_argument);
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(raw, min);
  if (!o.ciphers.empty() && SSL_CTX_set_cipher_list(raw, o.ciphers.c_str()) != 1) {
    ec = take_openssl_error(std::make_error_code(std::errc::invalid_argument));
    return nullptr;
  }
  std::string cert, key, ca;
  if ((ec = pem_text(o.cert, o.cert_file, cert)) || (ec = pem_text(o.key, o.key_file, key)) ||
      (ec = pem_text(o.ca, o.ca_file, ca)))
    return nullptr;
  if (!cert.empty() && (ec = use_cert_chain(raw, cert))) return nullptr;
  if (!key.empty() && (ec = use_key(raw, key))) return nullptr;
  if (!ca.empty()) {
    if ((ec = add_ca(raw, ca, server))) return nullptr;
  } else {
    SSL_CTX_set_default_verify_paths(raw);
  }
  return c;
}

}  // namespace sluice::tls
