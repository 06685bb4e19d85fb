// --metrics HOST:PORT (sluice-logd, sluice-fanout, sluice-log): a tiny
// HTTP/1.1 responder on the tool's own loop (a net::server, no thread) that
// answers 'GET /metrics' with the tool's stat_table in Prometheus' text
// format, and nothing else: 404 for another path, 405 for another method,
// 400 for what is not an HTTP/1.x request line. It is read-only: nothing a
// client sends changes the tool.
//
// Bounded, so that a scraper cannot cost the data path more than a reply:
// a request's line and headers must fit in 8 KiB and come within 10 s
// (else the connection is closed, counted), and at most 16 connections are
// open at once (one more is closed at once, counted). Each reply closes its
// connection (Connection: close), and no connection outlives 10 s. The listener, its connections and their
// timers are unref'd: they never keep the tool's loop running, so the tool
// ends as it would without --metrics.
//
//   case metrics: sluice_tools::add_metrics_arg(this_tool, o.metrics, arg); break;
//   ...
//   metrics_ = sluice_tools::start_metrics(this_tool, o_.metrics, "sluice_logd", [this] { return stats(); });
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "stat_table.h"
#include "tool.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"

namespace sluice_tools {

struct metrics_args {
  std::string addr;  // --metrics as given; empty: no metrics
  std::string host;
  std::uint16_t port = 0;

  bool enabled() const noexcept { return !addr.empty(); }
};

// --metrics ARG: HOST:PORT (port 0: any free one), or bad usage.
void add_metrics_arg(const tool& t, metrics_args& a, const std::string& arg);

class metrics_server {
 public:
  using table_fn = std::function<stat_table()>;

  /// `prefix`: the tool's metric prefix (sluice_logd), for the server's own
  /// counts; `table`: the tool's counts now, read at each scrape.
  metrics_server(std::string prefix, table_fn table);
  ~metrics_server();
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  /// Binds and listens at once; the error (EADDRINUSE, ...) when it cannot.
  std::error_code listen(const std::string& host, std::uint16_t port);
  std::optional<sluice::net::address_info> address() const { return server_.address(); }

  /// The body of 'GET /metrics': the tool's table, then the server's own
  /// counts.
  std::string render() const;

  static constexpr std::size_t max_request = 8 * 1024;
  static constexpr std::chrono::seconds request_timeout{10};
  static constexpr std::size_t max_connections = 16;

 private:
  struct client {
    sluice::net::socket* sock;
    std::string buf;  // the request so far
    sluice::timer_id timer = 0;
    bool answered = false;
  };

  void accept(sluice::net::socket& s);
  void on_data(client& c, std::string_view chunk);
  void answer(client& c, std::string_view request);
  void reply(client& c, int code, std::string_view reason, std::string_view extra, std::string_view body);
  void reject(client& c, std::size_t& count);

  std::string prefix_;
  table_fn table_;
  sluice::loop& loop_;
  char tag_ = 0;  // the owner of the request timers, unref'd
  // The server's own counts, in /metrics only.
  std::size_t ok_ = 0, not_found_ = 0, bad_method_ = 0, bad_request_ = 0;
  std::size_t too_large_ = 0, timed_out_ = 0;
  std::unordered_map<sluice::net::socket*, client> clients_;
  sluice::net::server server_;  // after clients_: its sockets' last events find them
};

/// Parses nothing: starts the server of `a` (when enabled) and says where
/// it listens ('TOOL: serving metrics on http://HOST:PORT/metrics'). An
/// address that cannot be listened on (a port in use) is bad usage: said
/// with the reason, exit status 2. Call it first in the tool's run(),
/// before anything else is queued on the loop: the listen error comes on a
/// tick, which it runs.
std::unique_ptr<metrics_server> start_metrics(const tool& t, const metrics_args& a, std::string prefix,
                                              metrics_server::table_fn table);

}  // namespace sluice_tools
