// tls_sink: a tls::socket's plaintext writable side (tls_sink.h).
#include "sluice/tls/detail/tls_sink.h"

#include <openssl/ssl.h>

#include <algorithm>

#include "sluice/base/errors.h"
#include "sluice/tls/detail/record_bio.h"
#include "sluice/tls/socket.h"
#include "sluice/tls/tls_error.h"

namespace sluice::tls::detail {

tls_sink::~tls_sink() {
  if (loop_) loop_->cancel(this);
}

void tls_sink::write(std::string_view chunk, write_done done) {
  done_.emplace(done);
  error_.clear();
  if (!owner_->secure_) {
    held_ = chunk;  // valid until done
    return;
  }
  send(chunk);
}

// SSL_write() copies its input into OpenSSL's record buffer anyway, so
// the batch goes to it where it lies, in pieces of whole records: the
// chunks that lie end to end (the writable packs small writes so) as one
// piece, and a large chunk as it is; only the bytes that would otherwise
// end a record short, between chunks that are apart, are gathered in
// scratch_. Every piece but the last is a multiple of 16 KiB, so the batch
// makes as few records as if it were one buffer.
void tls_sink::writev(const write_batch& batch, write_done done) {
  done_.emplace(done);
  error_.clear();
  owner_->records_->expect(batch.bytes());
  scratch_.clear();
  std::string_view run;  // adjacent chunks not yet encrypted
  std::string_view tail;  // a run's last part short of a record, not yet copied
  const auto feed = [&](std::string_view bytes) {
    if (!tail.empty() || !scratch_.empty()) {
      if (scratch_.empty()) scratch_.assign(tail);
      tail = {};
      const std::size_t k = std::min(record_plaintext - scratch_.size(), bytes.size());
      scratch_.append(bytes.data(), k);
      bytes.remove_prefix(k);
      if (scratch_.size() < record_plaintext) return true;
      if (!encrypt(scratch_)) return false;
      scratch_.clear();
    }
    const std::size_t whole = bytes.size() - bytes.size() % record_plaintext;
    if (whole > 0 && !encrypt(bytes.substr(0, whole))) return false;
    tail = bytes.substr(whole);
    return true;
  };
  for (std::string_view c : batch) {
    if (c.empty()) continue;
    if (!run.empty() && run.data() + run.size() == c.data()) {
      run = std::string_view(run.data(), run.size() + c.size());
      continue;
    }
    if (!run.empty() && !feed(run)) return;
    run = c;
  }
  if (!run.empty() && !feed(run)) return;
  if (!encrypt(scratch_.empty() ? tail : std::string_view(scratch_))) return;
  flush();
}

void tls_sink::final(final_done done) {
  final_.emplace(done);
  if (owner_->secure_) do_final();
}

void tls_sink::destroy(std::error_code err, destroy_done done) noexcept {
  final_.reset();
  if (done_ && loop_) {
    error_ = err ? err : make_error_code(errc::destroyed);
    held_.reset();
    waiting_ = false;
    loop_->next_tick([this] { complete(); }, this);
  }
  done(err);
}

void tls_sink::on_secure() noexcept {
  if (done_ && held_) {
    const std::string_view chunk = *held_;
    held_.reset();
    send(chunk);
  }
  if (final_ && !done_) do_final();
}

void tls_sink::on_tcp_drain() noexcept {
  if (waiting_) {
    waiting_ = false;
    complete();
  }
}

void tls_sink::on_tcp_finish() noexcept {
  if (ending_ && final_) {
    const final_done done = *final_;
    final_.reset();
    done({});
  }
}

void tls_sink::send(std::string_view plain) noexcept {
  owner_->records_->expect(plain.size());
  if (encrypt(plain)) flush();
}

// SSL_write_ex() takes a size_t (no cut at INT_MAX) and, without
// SSL_MODE_ENABLE_PARTIAL_WRITE and with a BIO that takes every byte, makes
// all the records in one call.
bool tls_sink::encrypt(std::string_view plain) noexcept {
  SSL* ssl = owner_->ssl_;
  while (!plain.empty()) {
    std::size_t n = 0;
    if (SSL_write_ex(ssl, plain.data(), plain.size(), &n) != 1 || n == 0) {
      error_ = take_openssl_error(make_error_code(errc::socket_closed));
      complete();
      return false;
    }
    plain.remove_prefix(std::min(n, plain.size()));
  }
  return true;
}

void tls_sink::flush() noexcept {
  if (owner_->flush_records()) {
    complete();
    return;
  }
  waiting_ = true;  // the TCP socket is past its high-water mark: its 'drain'
}

void tls_sink::complete() noexcept {
  const write_done done = *done_;
  done_.reset();
  done(error_);
}

void tls_sink::do_final() noexcept {
  if (owner_->tcp_gone_) {
    const final_done done = *final_;
    final_.reset();
    done(make_error_code(errc::socket_closed));
    return;
  }
  SSL_shutdown(owner_->ssl_);  // queues close_notify
  owner_->flush_records();
  ending_ = true;
  owner_->tcp_->end();  // 'finish' completes the final
}

}  // namespace sluice::tls::detail
