// lookup: Node v20's dns.lookup(host, { all: true }, callback), a host name
// to its addresses through getaddrinfo(), which blocks: it runs on a small
// pool of resolver threads, as libuv runs it on its thread pool, and the
// answer comes back on the caller's loop.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/base/errors.h"
#include "sluice/base/function.h"
#include "sluice/loop/loop.h"

namespace sluice::net {

/// One of the addresses a name has: Node's { address, family }, `family`
/// 4 or 6.
struct lookup_address {
  std::string address;
  int family = 0;

  bool operator==(const lookup_address&) const = default;
};

struct lookup_options {
  /// Node's family: 0 for both, 4 or 6 for that one only.
  int family = 0;
  /// Node's hints: getaddrinfo()'s ai_flags (AI_ADDRCONFIG, AI_V4MAPPED).
  /// net::socket::connect() passes AI_ADDRCONFIG, as Node's net does.
  int hints = 0;
  /// The loop that hears the answer; null means loop::current().
  loop* event_loop = nullptr;
};

/// What a socket's 'lookup' event carries (event_arg::source points to
/// one): Node's (err, address, family, host). On an error, `address` is
/// empty and `family` 0.
struct lookup_event {
  std::error_code error;
  std::string_view address;
  int family = 0;
  std::string_view host;
};

/// The callback: the error, or the addresses in getaddrinfo()'s order
/// (Node v20's "verbatim"), each once.
using lookup_callback = inline_function<void(std::error_code, std::span<const lookup_address>), 32>;

namespace detail {
struct lookup_state;
}

/// A lookup on its way. Dropping the handle does not cancel it (Node's
/// lookups cannot be cancelled at all); cancel() does.
class lookup_request {
 public:
  lookup_request() = default;
  explicit lookup_request(std::shared_ptr<detail::lookup_state> state) : state_(std::move(state)) {}

  /// From the loop's thread: the callback will not be called (it is
  /// destroyed now, with what it holds), and the loop no longer waits for
  /// the answer. A getaddrinfo() already running finishes on its thread and
  /// its answer is dropped. A no-op once the callback has run.
  void cancel() noexcept;
  /// Whether the callback is still to come.
  bool pending() const noexcept;

 private:
  std::shared_ptr<detail::lookup_state> state_;
};

/// Node: dns.lookup(host, { all: true, family, hints }, callback). Returns
/// at once; `callback` runs later on the loop (never inside this call),
/// which stays alive (run() does not return) until it has. A name that has
/// no address is an error whose code_name() is Node's code, "ENOTFOUND",
/// and whose message() is Node's, "getaddrinfo ENOTFOUND <host>"; the other
/// failures are named as libuv names them (EAI_AGAIN, EAI_FAIL, ...).
/// An IP literal comes back as itself, as from getaddrinfo().
///
///     sluice::net::lookup("localhost", {}, [](std::error_code ec, auto found) {
///       for (const auto& a : found) std::printf("%s IPv%d\n", a.address.c_str(), a.family);
///     });
///     sluice::loop::current().run();
///
/// At most four lookups run at a time, on resolver threads that are made
/// when needed and end after some seconds without work; the others wait
/// their turn (libuv's default thread pool also has four).
lookup_request lookup(std::string_view host, const lookup_options& options, lookup_callback callback);

/// The category of failed lookups; its name() is "sluice.getaddrinfo".
const coded_error_category& lookup_category() noexcept;
/// A failed lookup of `host`: `eai` is getaddrinfo()'s EAI_* code (for
/// EAI_SYSTEM, `sys_errno` is the errno). The host name is kept with the
/// error for its message (interned for the life of the process, up to a
/// bound past which new messages leave the name out).
std::error_code lookup_error(int eai, std::string_view host, int sys_errno = 0);
/// The resolver's own words for a failed lookup (gai_strerror(), or
/// strerror() for EAI_SYSTEM), e.g. "Name or service not known"; empty for
/// an error of another category.
std::string lookup_reason(const std::error_code& ec);

namespace detail {
/// The resolver pool: the threads it has now and the most it has had.
struct resolver_stats {
  std::size_t threads = 0;
  std::size_t peak_threads = 0;
  std::size_t max_threads = 0;
};
resolver_stats resolver_usage() noexcept;
}  // namespace detail

}  // namespace sluice::net
