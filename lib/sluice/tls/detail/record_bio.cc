#include "sluice/tls/detail/record_bio.h"

#include <openssl/bio.h>

#include <algorithm>
#include <cstring>

namespace sluice::tls::detail {

void record_buffers::feed(std::string_view chunk) {
  if (in.empty()) {
    kept.clear();
    in = chunk;
    return;
  }
  // `in` is the tail of `kept`: drop what was read, add the chunk.
  kept.erase(0, static_cast<std::size_t>(in.data() - kept.data()));
  kept.append(chunk);
  in = kept;
}

void record_buffers::keep_unread() {
  if (in.empty()) {
    kept.clear();
    in = {};
    return;
  }
  const bool in_kept = !kept.empty() && in.data() >= kept.data() && in.data() < kept.data() + kept.size();
  if (in_kept) return;
  kept.assign(in);
  in = kept;
}

void record_buffers::expect(std::size_t plaintext) {
  // A record carries up to 16 KiB of plaintext; its header, tag and (in
  // TLS 1.3) inner content type take 22 bytes with AES-GCM or ChaCha20, up
  // to 29 in TLS 1.2's GCM: 64 is room for any AEAD without padding.
  constexpr std::size_t fragment = 16 * 1024, overhead = 64;
  const std::size_t records = plaintext / fragment + 1;
  out.reserve(out.size() + plaintext + records * overhead);
}

void record_buffers::count(std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    if (skip_ > 0) {
      const std::size_t n = std::min(skip_, bytes.size());
      skip_ -= n;
      bytes.remove_prefix(n);
      continue;
    }
    const std::size_t n = std::min(sizeof header_ - header_len_, bytes.size());
    std::memcpy(header_ + header_len_, bytes.data(), n);
    header_len_ += n;
    bytes.remove_prefix(n);
    if (header_len_ == sizeof header_) {
      ++records;
      skip_ = (std::size_t{header_[3]} << 8) | header_[4];
      header_len_ = 0;
    }
  }
}

namespace {

record_buffers& buffers(BIO* b) { return *static_cast<record_buffers*>(BIO_get_data(b)); }

int read_ex(BIO* b, char* out, size_t len, size_t* done) {
  BIO_clear_retry_flags(b);
  record_buffers& r = buffers(b);
  if (r.in.empty()) {
    // No more for now: OpenSSL says SSL_ERROR_WANT_READ.
    BIO_set_retry_read(b);
    *done = 0;
    return 0;
  }
  const std::size_t n = std::min(len, r.in.size());
  std::memcpy(out, r.in.data(), n);
  r.in.remove_prefix(n);
  *done = n;
  return 1;
}

int write_ex(BIO* b, const char* data, size_t len, size_t* done) {
  BIO_clear_retry_flags(b);
  record_buffers& r = buffers(b);
  r.out.append(data, len);
  r.count(std::string_view(data, len));
  *done = len;
  return 1;
}

long ctrl(BIO* b, int cmd, long /*num*/, void* /*ptr*/) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;  // the records wait in `out` for the socket's flush
    case BIO_CTRL_PENDING:
      return static_cast<long>(buffers(b).in.size());
    case BIO_CTRL_WPENDING:
      return static_cast<long>(buffers(b).out.size());
    default:
      return 0;
  }
}

int create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* record_method() {
  static BIO_METHOD* const m = [] {
    BIO_METHOD* method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice TLS records");
    BIO_meth_set_read_ex(method, read_ex);
    BIO_meth_set_write_ex(method, write_ex);
    BIO_meth_set_ctrl(method, ctrl);
    BIO_meth_set_create(method, create);
    return method;
  }();
  return m;
}

}  // namespace

BIO* make_record_bio(record_buffers& b) {
  BIO* bio = BIO_new(record_method());
  BIO_set_data(bio, &b);
  return bio;
}

}  // namespace sluice::tls::detail
