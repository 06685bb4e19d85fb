// The peer for http-compare.sh: a keep-alive HTTP/1.1 "hello world" on
// Boost.Beast, written the way Beast's own async examples are (one session
// per connection: async_read of a request into a flat_buffer, async_write of
// the response, again while the request asks to keep the connection), on one
// io_context and one thread, as sluice's server runs.
//
//   beast_hello_server [PORT]     prints "listening on PORT" on stdout
#include <utility>  // before Asio: Boost 1.74 with g++ 12's C++20

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

class session : public std::enable_shared_from_this<session> {
 public:
  explicit session(tcp::socket s) : socket_(std::move(s)) {}
  void start() { read(); }

 private:
  void read() {
    request_ = {};
    http::async_read(socket_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->respond();
    });
  }

  void respond() {
    response_ = {};
    response_.result(http::status::ok);
    response_.version(request_.version());
    response_.set(http::field::content_type, "text/plain");
    response_.body() = "hello world\n";
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    http::async_write(socket_, response_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      if (self->response_.keep_alive())
        self->read();
      else
        self->socket_.shutdown(tcp::socket::shutdown_send, ec);
    });
  }

  tcp::socket socket_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](beast::error_code ec, tcp::socket s) {
    if (!ec) {
      s.set_option(tcp::no_delay(true));
      std::make_shared<session>(std::move(s))->start();
    }
    accept(acceptor);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 0);
  asio::io_context io(1);
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::printf("listening on %u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  asio::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&](auto, int) { io.stop(); });
  accept(acceptor);
  io.run();
}
