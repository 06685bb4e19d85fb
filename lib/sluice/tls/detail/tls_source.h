// tls_source: the plaintext readable side of a tls::socket. Internal to tls/
// (never installed): socket.cc makes one per socket.
#pragma once

#include <cstddef>
#include <string_view>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/sources/source.h"

namespace sluice::tls {

class socket;

namespace detail {

// Pushes what OpenSSL decrypts while the readable wants it, and pauses the
// TCP socket when it does not, so that a slow reader holds the peer back
// through TCP.
class tls_source final : public source {
 public:
  explicit tls_source(socket& owner) : owner_(&owner) {}

  void attach(loop& l) override { loop_ = &l; }
  void read(std::size_t n) override;
  std::error_code destroy(std::error_code err) noexcept override;

  bool wanted() const noexcept { return wanted_; }
  // Pushes; false when the readable wants no more for now.
  bool give(std::string_view plain);
  void give_eof();
  bool eof() const noexcept { return eof_; }
  void detach() noexcept { owner_ = nullptr; }

 private:
  socket* owner_;
  loop* loop_ = nullptr;
  bool wanted_ = false;
  bool eof_ = false;
};

}  // namespace detail
}  // namespace sluice::tls
