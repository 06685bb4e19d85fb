// Node: SecureContext (src/crypto/crypto_context.cc): setKey, setCert,
// addCACert, setMinProto, on one SSL_CTX.
#include "sluice/tls/context.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <mutex>
#include <string_view>

#include "sluice/base/errors.h"
#include "sluice/tls/tls_error.h"

namespace sluice::tls {
namespace {

// An error of one of the files: its message names the option and the file
// ("ca_file /etc/app/ca.crt: No such file or directory"), so that it says
// which file wherever it is reported (a throw's what(), a client socket's
// 'error'), and it stays the error it wraps for everything else: code_name()
// ("ENOENT", "ERR_OSSL_PEM_NO_START_LINE") and comparisons with an errc.
// As user_error()'s messages, each distinct one is kept for the life of the
// process (a program names few files).
class file_category_impl final : public coded_error_category {
 public:
  const char* name() const noexcept override { return "sluice.tls.file"; }
  std::string message(int value) const override { return entry(value).text; }
  std::string code(int value) const override { return code_name(entry(value).base); }
  std::error_condition default_error_condition(int value) const noexcept override {
    return entry(value).base.default_error_condition();
  }
  bool equivalent(int value, const std::error_condition& cond) const noexcept override {
    const std::error_code base = entry(value).base;
    return base.category().equivalent(base.value(), cond);
  }
  int intern(std::string text, std::error_code base) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].base == base && entries_[i].text == text) return static_cast<int>(i);
    entries_.push_back({std::move(text), base});
    return static_cast<int>(entries_.size() - 1);
  }

 private:
  struct item {
    std::string text;
    std::error_code base;
  };
  item entry(int value) const noexcept {
    std::lock_guard lock(mutex_);
    if (value <= 0 || static_cast<std::size_t>(value) >= entries_.size()) return {"unknown TLS file error", {}};
    return entries_[static_cast<std::size_t>(value)];
  }
  mutable std::mutex mutex_;
  std::deque<item> entries_{item{"success", {}}};  // value 0 is never an error
};

file_category_impl& file_category() {
  static file_category_impl category;
  return category;
}

// `ec`, said of the option `what` and its file (`detail`: text after the
// file, before the reason).
std::error_code file_error(std::string_view what, const std::string& file, std::error_code ec,
                           std::string_view detail = {}) {
  if (!ec) return ec;
  std::string text(what);
  text += ' ';
  text += file;
  text += detail;
  text += ": ";
  text += ec.message();
  return {file_category().intern(std::move(text), ec), file_category()};
}

// A file's contents. Opened without blocking, and refused unless it is a
// regular file: a FIFO would block the open (and then the read) until some
// other process writes to it, a device might never end.
std::error_code read_file(const std::string& file, std::string& out) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {errno, std::system_category()};
  struct ::stat st {};
  std::error_code ec;
  if (::fstat(fd, &st) != 0) {
    ec = {errno, std::system_category()};
  } else if (S_ISDIR(st.st_mode)) {
    ec = {EISDIR, std::system_category()};
  } else if (!S_ISREG(st.st_mode)) {
    ec = {EINVAL, std::system_category()};
  } else {
    out.clear();
    char buf[16 * 1024];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ec = {errno, std::system_category()};
        break;
      }
      if (n == 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return ec;
}

// The text of a PEM item given inline or as a file; empty when neither.
// `what` names the option ("ca"): its file's errors name the file.
std::error_code pem_text(std::string_view what, const std::string& text, const std::string& file, std::string& out) {
  if (!text.empty() && !file.empty()) return std::make_error_code(std::errc::invalid_argument);
  if (file.empty()) {
    out = text;
    return {};
  }
  const std::string option = std::string(what) + "_file";
  const std::error_code ec = read_file(file, out);
  if (ec == std::error_code(EINVAL, std::system_category()))
    return {file_category().intern(option + " " + file + ": not a regular file", ec), file_category()};
  return file_error(option, file, ec);
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
  if ((ec = pem_text("cert", o.cert, o.cert_file, cert)) || (ec = pem_text("key", o.key, o.key_file, key)) ||
      (ec = pem_text("ca", o.ca, o.ca_file, ca)))
    return nullptr;
  // What OpenSSL cannot make of a file's text names the file too.
  if (!cert.empty() && (ec = use_cert_chain(raw, cert))) {
    if (!o.cert_file.empty()) ec = file_error("cert_file", o.cert_file, ec);
    return nullptr;
  }
  if (!key.empty() && (ec = use_key(raw, key))) {
    if (!o.key_file.empty())
      ec = file_error("key_file", o.key_file, ec, o.cert_file.empty() ? std::string() : " (with cert_file " + o.cert_file + ")");
    return nullptr;
  }
  if (!ca.empty()) {
    if ((ec = add_ca(raw, ca, server))) {
      if (!o.ca_file.empty()) ec = file_error("ca_file", o.ca_file, ec);
      return nullptr;
    }
  } else {
    SSL_CTX_set_default_verify_paths(raw);
  }
  return c;
}

}  // namespace sluice::tls
