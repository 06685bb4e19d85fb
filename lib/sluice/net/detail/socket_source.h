// socket_source: the readable side of a net::socket, Node's onStreamRead.
// Internal to net/ (never installed): socket.cc makes one per socket.
#pragma once

#include <cstddef>
#include <memory>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/sources/source.h"

namespace sluice::net {

class socket;

namespace detail {

// Reads once the kernel says the socket is readable, and only while the
// readable asks for more.
class socket_source final : public source {
 public:
  socket_source(socket& owner, std::size_t chunk_size)
      : owner_(&owner), chunk_size_(chunk_size == 0 ? 64 * 1024 : chunk_size) {}
  ~socket_source() override;

  void attach(loop& l) override { loop_ = &l; }
  void read(std::size_t n) override;
  // Node: _destroy(), whose last step closes the handle.
  std::error_code destroy(std::error_code err) noexcept override;

  void ready(int fd) noexcept;
  void detach() noexcept { owner_ = nullptr; }
  std::size_t bytes_read() const noexcept { return bytes_read_; }

 private:
  void wait_readable() noexcept;
  void read_now() noexcept;

  socket* owner_;
  loop* loop_ = nullptr;
  int fd_ = -1;
  std::size_t chunk_size_;
  bool wanted_ = false;
  std::unique_ptr<char[]> buffer_;  // when the loop's is lent or too small (see read_now())
  std::size_t bytes_read_ = 0;
};

}  // namespace detail
}  // namespace sluice::net
