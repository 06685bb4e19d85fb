// The pattern sluice-fanout is measured against: Asio's chat-server example
// as servers copy it. Each subscriber has a std::deque of messages; deliver()
// pushes every line onto every deque, and one async_write at a time drains
// it. Nothing bounds a deque: a subscriber that stops reading makes its
// deque, and the server, grow for as long as it stalls.
//
//   asio_fanout_server [SNDBUF]   reads lines from standard input; prints
//                                 "asio-fanout: listening on 127.0.0.1:PORT" on stderr;
//                                 SNDBUF sets each subscriber's SO_SNDBUF, as
//                                 sluice-fanout's --send-buffer does
#include <utility>  // Boost 1.74's Asio headers use std::exchange without it

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <istream>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>

namespace asio = boost::asio;
using asio::ip::tcp;

class session;
using session_ptr = std::shared_ptr<session>;

struct room {
  std::set<session_ptr> sessions;
  bool ended = false;
};

class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket s, room& r) : socket_(std::move(s)), room_(r) {}

  void start() {
    room_.sessions.insert(shared_from_this());
    read();
  }

  void deliver(const std::string& line) {
    const bool idle = queue_.empty();
    queue_.push_back(line);
    if (idle) write();
  }

  // The input has ended: close once the queue is out.
  void finish() {
    if (queue_.empty()) close();
  }

 private:
  void read() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(discard_), [this, self](boost::system::error_code ec, std::size_t) {
      if (ec) return close();
      read();
    });
  }

  void write() {
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(queue_.front()), [this, self](boost::system::error_code ec, std::size_t) {
      if (ec) return close();
      queue_.pop_front();
      if (!queue_.empty())
        write();
      else if (room_.ended)
        close();
    });
  }

  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    room_.sessions.erase(shared_from_this());
  }

  tcp::socket socket_;
  room& room_;
  std::deque<std::string> queue_;
  char discard_[4096];
};

class server {
 public:
  server(asio::io_context& io, int sndbuf)
      : sndbuf_(sndbuf), acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), input_(io, ::dup(STDIN_FILENO)) {
    std::fprintf(stderr, "asio-fanout: listening on 127.0.0.1:%u\n", acceptor_.local_endpoint().port());
    accept();
    read_line();
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (!ec) {
        if (sndbuf_ > 0) s.set_option(asio::socket_base::send_buffer_size(sndbuf_));
        std::make_shared<session>(std::move(s), room_)->start();
      }
      if (!room_.ended) accept();
    });
  }

  void read_line() {
    asio::async_read_until(input_, buffer_, '\n', [this](boost::system::error_code ec, std::size_t n) {
      if (ec) {
        room_.ended = true;
        acceptor_.close();
        auto all = room_.sessions;
        for (auto& s : all) s->finish();
        return;
      }
      std::string line(asio::buffers_begin(buffer_.data()), asio::buffers_begin(buffer_.data()) + n);
      buffer_.consume(n);
      for (auto& s : room_.sessions) s->deliver(line);
      read_line();
    });
  }

  int sndbuf_;
  tcp::acceptor acceptor_;
  asio::posix::stream_descriptor input_;
  asio::streambuf buffer_;
  room room_;
};

int main(int argc, char** argv) {
  asio::io_context io(1);
  server s(io, argc > 1 ? std::atoi(argv[1]) : 0);
  io.run();
}
