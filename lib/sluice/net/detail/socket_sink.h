// socket_sink: the writable side of a net::socket, Node's _writeGeneric,
// _writev and _final. Internal to net/ (never installed): socket.cc makes
// one per socket.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <system_error>

#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"

namespace sluice::net {

class socket;

namespace detail {

// Writes made before the connection is up wait for it (Node waits for
// 'connect'); then the bytes go through the io layer's fd_writer, as an
// fd_sink's do.
class socket_sink final : public sink {
 public:
  socket_sink(socket& owner, bool coalesce)
      : sink(connecting_caps), owner_(&owner), out_(-1), coalesce_(coalesce) {}
  ~socket_sink() override;

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  // Before the connection one write waits for it and the others stay in the
  // stream's buffer, as in Node (whose _writeGeneric holds one): if the
  // connection fails, the one waiting hears ERR_SOCKET_CLOSED_BEFORE_CONNECTION
  // and the others the connection's error. So writev is declared only once
  // connected (connected() sets connected_caps); a turn's writes then reach
  // the kernel together, in one sendmsg().
  static constexpr sink_caps connecting_caps{.final = true, .coalesce = true};
  static constexpr sink_caps connected_caps{.writev = true, .final = true, .coalesce = true};
  static constexpr sink_caps connected_at_once_caps{.writev = true, .final = true};  // socket_options::coalesce false

  // Node: Socket.prototype._final(): shutdown(SHUT_WR) once the writes are
  // out, deferred until 'connect' while connecting.
  void final(final_done done) override;

  void destroy(std::error_code err, destroy_done done) noexcept override;

  // Accepted: connected from the start.
  void ready(int fd) noexcept {
    connected(fd);
    start_held();
  }
  // The connection is up: what is written from now on goes to the kernel.
  void connected(int fd) noexcept {
    out_.reset(fd);
    ready_ = true;
    set_caps(coalesce_ ? connected_caps : connected_at_once_caps);
  }
  // After 'connect' (Node's pending write and _final wait in 'connect'
  // listeners): start what waited for it.
  void start_held() noexcept;
  // The socket has emitted 'close': a write that waited for a connection
  // that never came hears it now.
  void after_close() noexcept;
  void detach() noexcept { owner_ = nullptr; }

  std::size_t syscalls() const noexcept { return out_.syscalls(); }
  std::size_t bytes_written() const noexcept { return out_.bytes_written(); }
  std::size_t chunks() const noexcept { return chunks_; }
  /// Bytes of the call in flight that the kernel has taken already.
  std::size_t in_flight_written() const noexcept { return done_ ? out_.bytes_written() - call_start_ : 0; }

 private:
  void start(write_done done, std::size_t bytes) noexcept;
  // Writes what the kernel takes; waits for POLLOUT for the rest, with the
  // write deadline running.
  void resume() noexcept;
  void complete() noexcept;
  void do_final() noexcept;

  socket* owner_;
  loop* loop_ = nullptr;
  sluice::detail::fd_writer out_;
  std::optional<write_done> done_;
  std::optional<final_done> final_;
  std::error_code error_;
  std::size_t call_bytes_ = 0;
  std::size_t call_start_ = 0;  // out_.bytes_written() when the call started
  std::size_t chunks_ = 0;
  bool ready_ = false;
  bool held_ = false;  // done_ waits for the connection
  bool destroyed_ = false;
  bool coalesce_;  // socket_options::coalesce
};

}  // namespace detail
}  // namespace sluice::net
