// context: Node's tls.createSecureContext(): the key, certificate and trusted
// CAs that one side of many connections presents and checks with.
#pragma once

#include <memory>
#include <string>
#include <system_error>

struct ssl_ctx_st;

namespace sluice::tls {

/// Node's SecureContext options. Each PEM item is given as its text (`key`,
/// `cert`, `ca`, as Node takes them) or as a file (`key_file`, ...), not
/// both. Without `ca`/`ca_file` the peers are checked against the system's
/// store (Differs from Node, which trusts its own bundled copy of Mozilla's).
struct context_options {
  std::string key;
  std::string key_file;
  /// The certificate, and any intermediate ones after it (a chain in one PEM).
  std::string cert;
  std::string cert_file;
  /// The CAs a peer's certificate must chain to.
  std::string ca;
  std::string ca_file;
  /// Node's minVersion ("TLSv1.2", its default, or "TLSv1.3").
  std::string min_version = "TLSv1.2";
  /// Node's ciphers (the TLS 1.2 list, OpenSSL's syntax); empty: OpenSSL's default.
  std::string ciphers;
};

/// A loaded SSL_CTX, shared by the connections made with it (a server's, or
/// several clients'). Node: tls.createSecureContext(options).
///
///     auto ctx = sluice::tls::context::make({.key_file = "server.key", .cert_file = "server.crt"}, true);
class context {
 public:
  /// Throws sluice::stream_error (with OpenSSL's reason: "no start line",
  /// "key values mismatch", or the errno of a file that cannot be read), as
  /// Node's createSecureContext throws. An error of a file names the option
  /// and the file: "tls::context: ca_file /etc/app/ca.crt: No such file or
  /// directory", "key_file K (with cert_file C): key values mismatch"; its
  /// code_name() is still the error's own ("ENOENT",
  /// "ERR_OSSL_X509_KEY_VALUES_MISMATCH"). A file is read only if it is a
  /// regular file (symbolic links followed): a FIFO or a device is refused
  /// ("...: not a regular file", EINVAL) instead of blocking the caller.
  static std::shared_ptr<context> make(const context_options& options, bool server);
  /// The non-throwing twin: null, and `ec` set, on failure.
  static std::shared_ptr<context> make(const context_options& options, bool server, std::error_code& ec);

  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  ssl_ctx_st* native() const noexcept { return ctx_; }
  bool is_server() const noexcept { return server_; }

 private:
  context(ssl_ctx_st* ctx, bool server) noexcept : ctx_(ctx), server_(server) {}
  ssl_ctx_st* ctx_;
  bool server_;
};

}  // namespace sluice::tls
