// --metrics: the HTTP side (see metrics_server.h).
#include "metrics_server.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "args.h"

namespace sluice_tools {

void add_metrics_arg(const tool& t, metrics_args& a, const std::string& arg) {
  if (arg.rfind("unix:", 0) == 0) t.usage_error("--metrics wants HOST:PORT, not a Unix socket, got '" + arg + "'");
  std::string why;
  if (!parse_host_port("--metrics", arg, a.host, a.port, 0, why)) t.usage_error(why);
  a.addr = arg;
}

namespace {

sluice::net::server_options listener_options() {
  sluice::net::server_options so;
  so.max_connections = metrics_server::max_connections;
  // Not half-open: a client that ends its side gets its answer if its
  // request was whole (read before the end), and its connection ends
  // then, so that clients gone away do not hold the 16 places.
  return so;
}

}  // namespace

metrics_server::metrics_server(std::string prefix, table_fn table)
    : prefix_(std::move(prefix)), table_(std::move(table)), loop_(sluice::loop::current()),
      server_(listener_options()) {
  loop_.unref(&tag_);
  server_.on_connection([this](sluice::net::socket& s) { accept(s); });
  // After 'listening', an accept error (EMFILE): the server pauses
  // accepting a while and goes on, and so does the tool.
  server_.on(sluice::event::error, [](std::error_code) {});
}

metrics_server::~metrics_server() {
  loop_.cancel(&tag_);
  loop_.ref(&tag_);
}

std::error_code metrics_server::listen(const std::string& host, std::uint16_t port) {
  std::error_code failed;
  const sluice::listener_id id = server_.on(sluice::event::error, [&failed](std::error_code ec) { failed = ec; });
  server_.listen(port, host);
  // The bind is done: a failure is queued as 'error' for the next ticks,
  // which are the only ones queued yet (start_metrics() comes first).
  if (!server_.listening()) loop_.run_until_idle();
  server_.off(sluice::event::error, id);
  if (!server_.listening() && !failed) failed = std::make_error_code(std::errc::address_not_available);
  if (!failed) server_.unref();
  return failed;
}

void metrics_server::accept(sluice::net::socket& s) {
  s.unref();
  client& c = clients_.emplace(&s, client{&s, {}}).first->second;
  // The bound on a connection's life: a request not whole by then is
  // counted; an answered client that keeps its side open is let go too.
  c.timer = loop_.set_timeout(
      request_timeout, [this, &c] {
        c.timer = 0;
        if (c.answered) c.sock->destroy();
        else reject(c, timed_out_);
      },
      &tag_);
  s.on(sluice::event::data, [this, &c](std::string_view chunk) { on_data(c, chunk); });
  s.on(sluice::event::error, [](std::error_code) {});  // a client's reset is its own business
  s.on(sluice::event::close, [this, &s] {
    const auto it = clients_.find(&s);
    if (it == clients_.end()) return;
    if (it->second.timer != 0) loop_.clear_timeout(it->second.timer);
    clients_.erase(it);
  });
}

// The request line and headers, up to the blank line that ends them; a
// body (there is none in a GET) is not read.
void metrics_server::on_data(client& c, std::string_view chunk) {
  if (c.answered) return;
  c.buf.append(chunk.substr(0, max_request + 4 - std::min(c.buf.size(), max_request + 4)));
  std::size_t end = c.buf.find("\r\n\r\n");
  if (end == std::string::npos) end = c.buf.find("\n\n");
  if (end == std::string::npos || end > max_request) {
    if (c.buf.size() > max_request) reject(c, too_large_);
    return;
  }
  answer(c, std::string_view(c.buf).substr(0, end));
}

// 'METHOD SP TARGET SP HTTP/1.x': GET /metrics (a query string is ignored)
// is the only request answered with the counts.
void metrics_server::answer(client& c, std::string_view request) {
  const std::string_view line = request.substr(0, request.find_first_of("\r\n"));
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0 || sp1 == 0) {
    ++bad_request_;
    return reply(c, 400, "Bad Request", "", "bad request\n");
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  if (method != "GET") {
    ++bad_method_;
    return reply(c, 405, "Method Not Allowed", "Allow: GET\r\n", "only GET /metrics\n");
  }
  if (target != "/metrics") {
    ++not_found_;
    return reply(c, 404, "Not Found", "", "not found: only /metrics is served\n");
  }
  ++ok_;
  reply(c, 200, "OK", "", render());
}

void metrics_server::reply(client& c, int code, std::string_view reason, std::string_view extra,
                           std::string_view body) {
  c.answered = true;
  std::string r = "HTTP/1.1 " + std::to_string(code) + ' ';
  r += reason;
  r += "\r\nContent-Type: ";
  r += code == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8";
  r += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  r += extra;
  r += "\r\n";
  r += body;
  c.sock->end(std::move(r));
}

// Too large or too slow: closed without a reply (the client may still be
// sending: a reply could not be read before the reset), and counted.
void metrics_server::reject(client& c, std::size_t& count) {
  ++count;
  c.answered = true;
  c.buf.clear();
  c.buf.shrink_to_fit();
  c.sock->destroy();
}

std::string metrics_server::render() const {
  metrics_text out;
  write_metrics(table_(), out);
  const std::string requests = prefix_ + "_metrics_requests_total";
  out.family(requests, "Requests to --metrics answered, by HTTP status code.", metric_type::counter);
  out.sample(requests, ok_, {{"code", "200"}});  // this one included
  out.sample(requests, bad_request_, {{"code", "400"}});
  out.sample(requests, not_found_, {{"code", "404"}});
  out.sample(requests, bad_method_, {{"code", "405"}});
  const std::string closed = prefix_ + "_metrics_requests_closed_total";
  out.family(closed,
             "Connections to --metrics closed without an answer: a request over 8 KiB (too_large), not whole "
             "within 10 s (timeout), or past 16 connections at once (too_many).",
             metric_type::counter);
  out.sample(closed, too_large_, {{"reason", "too_large"}});
  out.sample(closed, timed_out_, {{"reason", "timeout"}});
  out.sample(closed, server_.dropped(), {{"reason", "too_many"}});
  return out.str();
}

std::unique_ptr<metrics_server> start_metrics(const tool& t, const metrics_args& a, std::string prefix,
                                              metrics_server::table_fn table) {
  if (!a.enabled()) return nullptr;
  auto m = std::make_unique<metrics_server>(std::move(prefix), std::move(table));
  if (const std::error_code ec = m->listen(a.host, a.port))
    t.usage_error("--metrics " + a.addr + ": cannot listen: " + ec.message());
  const auto at = m->address();
  if (at->family == "IPv6")
    std::fprintf(stderr, "%s: serving metrics on http://[%s]:%u/metrics\n", t.name, at->address.c_str(), at->port);
  else
    std::fprintf(stderr, "%s: serving metrics on http://%s:%u/metrics\n", t.name, at->address.c_str(), at->port);
  return m;
}

}  // namespace sluice_tools
