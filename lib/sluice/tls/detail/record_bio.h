// record_bio: the BIO between a tls::socket's OpenSSL and its TCP socket.
// Internal to libsluice-tls (never installed; its code is tls/record_bio.cc).
//
// OpenSSL's memory BIOs cost a round trip a copy each way and more: every
// BIO_reset() of the write side clears the whole buffer it ever grew to,
// and every write grows a BUF_MEM. This one reads the ciphertext from where
// the TCP socket's 'data' put it (copied only when OpenSSL leaves part of it
// for later) and writes the records into one string that goes to the TCP
// socket's write() as it is, counting them (TLS record headers) on the way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

struct bio_st;

namespace sluice::tls::detail {

struct record_buffers {
  // In: the ciphertext OpenSSL reads next. While the TCP socket's 'data'
  // is handled, `in` may be that chunk itself; otherwise it is the tail of
  // `kept`, what OpenSSL left (see keep_unread()).
  std::string_view in;
  std::string kept;
  // Out: the records written since the last take.
  std::string out;
  std::size_t records = 0;

  // Room in `out` for the records of `plaintext` more bytes, before
  // SSL_write() makes them: OpenSSL hands the BIO one record at a time, and
  // a string grown record by record would copy what it holds at every
  // doubling (as many bytes again as the batch, on average).
  void expect(std::size_t plaintext);

  // The TCP socket read `chunk`: OpenSSL reads it next (after what it left).
  void feed(std::string_view chunk);
  // After OpenSSL had its go at a fed chunk: what it left is copied, since
  // the chunk is the TCP socket's until its 'data' returns.
  void keep_unread();
  bool in_empty() const noexcept { return in.empty(); }

  // Counts the records in `bytes`, the next bytes OpenSSL wrote: a record
  // is a 5-byte header (type, version, length) and `length` bytes.
  void count(std::string_view bytes) noexcept;

 private:
  unsigned char header_[5] = {};
  std::size_t header_len_ = 0;
  std::size_t skip_ = 0;  // bytes of the current record's body still to come
};

/// A BIO over `b` for both directions (SSL_set_bio(ssl, bio, bio)); `b`
/// must outlive it (the SSL that owns it).
bio_st* make_record_bio(record_buffers& b);

}  // namespace sluice::tls::detail
