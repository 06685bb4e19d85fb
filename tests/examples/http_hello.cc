// An HTTP/1.1 "hello world" on sluice::net, on sluice's own poll loop, with
// callbacks: keep-alive connections (HTTP/1.1's default), pipelined requests
// answered in order, "Connection: close" and HTTP/1.0 honoured. It is the
// server perf/http/http-compare.sh drives with wrk against Node's http and
// Boost.Beast; tests/examples/http-check.sh talks to it with curl and raw
// pipelined requests.
//
//   example_http_hello [PORT]    prints "listening on PORT"; SIGTERM stops it
//
// The parsing is the least a server may do: the request line and headers up
// to the blank line, a body skipped by its Content-Length. A request it
// cannot read is answered 400 (431 when its head is past 8 KiB) and the
// connection closes, as Node's http does.
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "sluice/loop/signals.h"

namespace {

constexpr std::size_t max_head = 8 * 1024;

constexpr std::string_view hello =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 12\r\n"
    "\r\n"
    "hello world\n";
constexpr std::string_view hello_close =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 12\r\n"
    "Connection: close\r\n"
    "\r\n"
    "hello world\n";

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y)); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// What the server needs from one request's head.
struct request_head {
  bool keep_alive = true;
  std::size_t body = 0;  // Content-Length
};

// Parses "METHOD TARGET HTTP/1.x\r\n" and the header lines (without the
// final blank line); nullopt when they are not HTTP/1.x.
std::optional<request_head> parse_head(std::string_view head) {
  request_head r;
  auto eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const auto sp1 = line.find(' ');
  const auto sp2 = line.rfind(' ');
  if (sp1 == 0 || sp1 == std::string_view::npos || sp2 == sp1) return std::nullopt;
  // Methods are upper-case words (GET, POST, ...), as Node's parser takes them.
  const std::string_view method = line.substr(0, sp1);
  if (!std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) return std::nullopt;
  const std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.0")
    r.keep_alive = false;
  else if (version != "HTTP/1.1")
    return std::nullopt;
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    const std::string_view field = head.substr(0, eol);
    const auto colon = field.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
    const std::string_view name = field.substr(0, colon), value = trim(field.substr(colon + 1));
    if (iequals(name, "connection")) {
      if (iequals(value, "close")) r.keep_alive = false;
      if (iequals(value, "keep-alive")) r.keep_alive = true;
    } else if (iequals(name, "content-length")) {
      if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
      r.body = std::strtoull(std::string(value).c_str(), nullptr, 10);
    } else if (iequals(name, "transfer-encoding")) {
      return std::nullopt;  // no chunked bodies here: 400, as a server that does not take them says
    }
  }
  return r;
}

// One connection: what has come in and not been answered yet.
struct connection {
  sluice::net::socket& s;
  std::string pending;
  std::size_t body_left = 0;  // of the request last answered
  bool closing = false;

  void on_data(std::string_view chunk) {
    if (closing) return;
    // The common case, a whole request in one chunk, is parsed in place.
    std::string_view in = chunk;
    if (!pending.empty()) {
      pending.append(chunk);
      in = pending;
    }
    const std::size_t used = serve(in);
    if (pending.empty())
      pending.assign(in.substr(used));
    else
      pending.erase(0, used);
    if (!closing && pending.size() > max_head) refuse("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  }

  // Answers each complete request in `in`, in order; returns the bytes used.
  std::size_t serve(std::string_view in) {
    std::size_t used = 0;
    while (!closing) {
      if (body_left) {
        const std::size_t n = std::min(body_left, in.size() - used);
        body_left -= n;
        used += n;
        if (body_left) break;
      }
      const std::string_view rest = in.substr(used);
      const auto end = rest.find("\r\n\r\n");
      if (end == std::string_view::npos) break;
      const auto head = parse_head(rest.substr(0, end));
      if (!head) {
        refuse("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        break;
      }
      used += end + 4;
      body_left = head->body;
      if (head->keep_alive) {
        s.write(hello);
      } else {
        closing = true;
        s.end(hello_close);
      }
    }
    return used;
  }

  void refuse(std::string_view response) {
    closing = true;
    if (response.empty())
      s.end();
    else
      s.end(response);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int port = argc > 1 ? std::atoi(argv[1]) : 0;
  auto& loop = sluice::loop::current();
  sluice::net::server srv;
  std::unordered_set<connection*> open;
  srv.on_connection([&open](sluice::net::socket& s) {
    s.set_no_delay(true);
    auto* c = new connection{.s = s, .pending = {}};
    open.insert(c);
    s.on(sluice::event::data, [c](std::string_view chunk) { c->on_data(chunk); });
    s.on(sluice::event::error, [](std::error_code) {});  // a client that went away: 'close' follows
    s.on(sluice::event::close, [c, &open] {
      open.erase(c);
      delete c;
    });
  });
  srv.on(sluice::event::listening, [&srv] {
    std::printf("listening on %u\n", static_cast<unsigned>(srv.address()->port));
    std::fflush(stdout);
  });
  // SIGTERM: stop accepting and end the idle keep-alive connections (every
  // request read has been answered already); run() returns once they close.
  sluice::signal_watch term;
  term = sluice::on_signal(loop, SIGTERM, [&] {
    srv.close();
    const std::vector<connection*> idle(open.begin(), open.end());
    for (connection* c : idle) c->refuse({});
    term.reset();
  });
  srv.listen(static_cast<std::uint16_t>(port), "127.0.0.1");
  loop.run();
  std::printf("stopped\n");
}
