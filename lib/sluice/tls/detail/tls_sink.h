// tls_sink: the plaintext writable side of a tls::socket, Node's TLSSocket
// _write, _writev and _final. Internal to tls/ (never installed): socket.cc
// makes one per socket.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"

namespace sluice::tls {

class socket;

namespace detail {

// Writes wait for the handshake; then a call's chunks go to SSL_write() as
// one buffer, which OpenSSL cuts into records of 16 KiB, and the call is done
// once the TCP socket has room again ('drain').
class tls_sink final : public sink {
 public:
  explicit tls_sink(socket& owner) : sink({.final = true, .coalesce = true}), owner_(&owner) {}
  // Writes wait for the handshake one at a time; once secure a turn's writes
  // reach SSL_write() together (writev): as few records as they fill.
  void secured() noexcept { set_caps({.writev = true, .final = true, .coalesce = true}); }
  ~tls_sink() override;

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  // Node: TLSSocket's _final: close_notify, then the TCP socket's end().
  void final(final_done done) override;
  void destroy(std::error_code err, destroy_done done) noexcept override;

  // The handshake is done: what waited for it goes.
  void on_secure() noexcept;
  void on_tcp_drain() noexcept;
  void on_tcp_finish() noexcept;
  void detach() noexcept { owner_ = nullptr; }

 private:
  // A record's plaintext at most (TLS: 2^14 bytes).
  static constexpr std::size_t record_plaintext = 16 * 1024;

  void send(std::string_view plain) noexcept;
  // SSL_write_ex() until all of `plain` is in records; false when it failed,
  // and the callback has been told (see tls_sink.cc).
  bool encrypt(std::string_view plain) noexcept;
  void flush() noexcept;
  void complete() noexcept;
  void do_final() noexcept;

  socket* owner_;
  loop* loop_ = nullptr;
  std::optional<write_done> done_;
  std::optional<final_done> final_;
  std::optional<std::string_view> held_;  // a write that waits for the handshake
  std::error_code error_;
  std::string scratch_;
  bool waiting_ = false;
  bool ending_ = false;
};

}  // namespace detail
}  // namespace sluice::tls
