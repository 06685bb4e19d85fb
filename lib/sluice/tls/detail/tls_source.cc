// tls_source: a tls::socket's plaintext readable side (tls_source.h).
#include "sluice/tls/detail/tls_source.h"

#include "sluice/tls/socket.h"

namespace sluice::tls::detail {

void tls_source::read(std::size_t /*n*/) {
  wanted_ = true;
  if (owner_ && owner_->secure_) owner_->cycle();
}

std::error_code tls_source::destroy(std::error_code err) noexcept {
  wanted_ = false;
  if (owner_) {
    // A destroyed socket waits for no handshake: its timer would keep
    // the loop running (a client given up on, kept until it is deleted).
    owner_->cancel_handshake_timer();
    if (!owner_->tcp_gone_) owner_->tcp_->destroy();
  }
  return err;
}

bool tls_source::give(std::string_view plain) {
  if (!push(plain)) wanted_ = false;
  return wanted_;
}

void tls_source::give_eof() {
  if (eof_) return;
  eof_ = true;
  wanted_ = false;
  push_eof();
  stream().read(0);  // as net's source: 'end' without a consumer
}

}  // namespace sluice::tls::detail
