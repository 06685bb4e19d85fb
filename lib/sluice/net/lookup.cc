// The resolver pool behind net::lookup(): getaddrinfo() on up to four
// threads, the answer handed to the caller's loop with loop::post().
//
// Why threads of our own and not glibc's getaddrinfo_a(): getaddrinfo_a()
// is glibc's only (musl has none), tells of completion by a signal or by a
// thread it starts for each answer, and still runs each lookup on a thread
// of its own; with a pool the bound is ours, the answer goes through the
// loop's post() as every other thread's completion does, and a cancelled
// lookup that has not started costs nothing.
#include "sluice/net/lookup.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::net {
namespace detail {

// One lookup. The resolver thread reads `host` and `options` and writes
// `error` and `found` before it posts the answer (post() orders them);
// `target` is shared with it under `mutex`; the rest is the loop thread's.
struct lookup_state {
  std::string host;
  lookup_options options;
  lookup_callback callback;
  loop::close_hook hook;
  bool done = false;  // delivered or cancelled
  std::error_code error;
  std::vector<lookup_address> found;
  std::mutex mutex;
  loop* target = nullptr;  // null once nobody waits for the answer
};

namespace {

// Unlinks the lookup from its loop: the loop no longer waits for it.
void settle(lookup_state& st) noexcept {
  st.done = true;
  loop* l;
  {
    std::lock_guard lock(st.mutex);
    l = st.target;
    st.target = nullptr;
  }
  if (l) {
    l->remove_close_hook(st.hook);
    l->release();
  }
}

void resolve(lookup_state& st) {
  addrinfo hints{};
  hints.ai_family = st.options.family == 4 ? AF_INET : st.options.family == 6 ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // as libuv's callers do: one entry per address
  hints.ai_flags = st.options.hints;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(st.host.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    st.error = lookup_error(rc, st.host, rc == EAI_SYSTEM ? errno : 0);
    return;
  }
  for (const addrinfo* a = res; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = "";
    lookup_address found;
    if (a->ai_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
      found = {text, 4};
    } else if (a->ai_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof text);
      found = {text, 6};
    } else {
      continue;
    }
    bool seen = false;
    for (const auto& f : st.found) seen = seen || f == found;
    if (!seen) st.found.push_back(std::move(found));
  }
  ::freeaddrinfo(res);
  if (st.found.empty()) st.error = lookup_error(EAI_NONAME, st.host);
}

void deliver(const std::shared_ptr<lookup_state>& st) noexcept {
  if (st->done) return;  // cancelled after the answer was posted
  settle(*st);
  lookup_callback cb = std::move(st->callback);
  cb(st->error, st->found);
}

// Hands the answer to the loop, unless nobody waits for it any more (the
// post happens under the mutex, so that cancel() or the loop's end, which
// clear `target` under it, are never raced).
void answer(const std::shared_ptr<lookup_state>& st) {
  std::lock_guard lock(st->mutex);
  if (st->target) st->target->post([st] { deliver(st); });
}

class resolver {
 public:
  static constexpr std::size_t max_threads = 4;

  void submit(std::shared_ptr<lookup_state> st) {
    std::unique_lock lock(mutex_);
    jobs_.push_back(std::move(st));
    if (jobs_.size() > idle_ && threads_ < max_threads) {
      try {
        std::thread([this] { run(); }).detach();
        ++threads_;
        if (threads_ > peak_) peak_ = threads_;
        return;
      } catch (const std::system_error&) {
        if (threads_ == 0) {
          // No thread to run it: the lookup fails, as libuv's does when
          // its pool cannot start.
          auto failed = std::move(jobs_.back());
          jobs_.pop_back();
          lock.unlock();
          failed->error = lookup_error(EAI_SYSTEM, failed->host, EAGAIN);
          answer(failed);
          return;
        }
      }
    }
    wake_.notify_one();
  }

  resolver_stats usage() {
    std::lock_guard lock(mutex_);
    return {threads_, peak_, max_threads};
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      const bool work = wake_.wait_for(lock, std::chrono::seconds(10), [this] { return !jobs_.empty(); });
      --idle_;
      if (!work) {
        --threads_;
        return;  // idle for a while: a program that looks up nothing more keeps no thread
      }
      std::shared_ptr<lookup_state> st = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      bool wanted;
      {
        std::lock_guard g(st->mutex);
        wanted = st->target != nullptr;
      }
      if (wanted) {  // a lookup cancelled before its turn costs nothing
        resolve(*st);
        answer(st);
      }
      st.reset();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<lookup_state>> jobs_;
  std::size_t threads_ = 0;
  std::size_t idle_ = 0;
  std::size_t peak_ = 0;
};

// Never destroyed: detached threads may still wait on it while the process
// exits.
resolver& the_resolver() {
  static resolver* r = new resolver;
  return *r;
}

// The names a failed lookup is reported with: libuv's code names, and
// Node's ENOTFOUND for "no such name" (lib/internal/errors.js dnsException).
std::string node_code(int eai, int sys_errno) {
  switch (eai) {
    case EAI_NONAME:
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
      return "ENOTFOUND";
    case EAI_AGAIN: return "EAI_AGAIN";
    case EAI_BADFLAGS: return "EAI_BADFLAGS";
    case EAI_FAIL: return "EAI_FAIL";
    case EAI_FAMILY: return "EAI_FAMILY";
    case EAI_MEMORY: return "EAI_MEMORY";
    case EAI_SERVICE: return "EAI_SERVICE";
    case EAI_SOCKTYPE: return "EAI_SOCKTYPE";
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
#endif
#ifdef EAI_OVERFLOW
    case EAI_OVERFLOW: return "EAI_OVERFLOW";
#endif
#ifdef EAI_CANCELED
    case EAI_CANCELED: return "EAI_CANCELED";
#endif
    case EAI_SYSTEM: {
      const char* n = sys_errno ? strerrorname_np(sys_errno) : nullptr;
      return n ? n : "EAI_SYSTEM";
    }
    default: return "EAI_UNKNOWN";
  }
}

struct failure {
  int eai;
  int sys_errno;
  std::string host;
};

// Interned failures, as user_error() interns messages: an error_code holds
// an int, and Node's message names the host.
class lookup_category_impl final : public coded_error_category {
 public:
  static constexpr std::size_t max_entries = 4096;

  const char* name() const noexcept override { return "sluice.getaddrinfo"; }
  std::string message(int value) const override {
    const failure f = at(value);
    std::string m = "getaddrinfo " + node_code(f.eai, f.sys_errno);
    if (!f.host.empty()) m += " " + f.host;
    return m;
  }
  std::string code(int value) const override {
    const failure f = at(value);
    return node_code(f.eai, f.sys_errno);
  }
  int intern(int eai, int sys_errno, std::string_view host) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].eai == eai && entries_[i].sys_errno == sys_errno && entries_[i].host == host)
        return static_cast<int>(i);
    // Past the bound a program that looks up ever new names keeps no more:
    // the error names no host then.
    if (entries_.size() >= max_entries) host = {};
    for (std::size_t i = 1; i < entries_.size() && host.empty(); ++i)
      if (entries_[i].eai == eai && entries_[i].sys_errno == sys_errno && entries_[i].host.empty())
        return static_cast<int>(i);
    entries_.push_back({eai, sys_errno, std::string(host)});
    return static_cast<int>(entries_.size() - 1);
  }
  failure at(int value) const {
    std::lock_guard lock(mutex_);
    if (value <= 0 || static_cast<std::size_t>(value) >= entries_.size()) return {EAI_FAIL, 0, {}};
    return entries_[static_cast<std::size_t>(value)];
  }

 private:
  mutable std::mutex mutex_;
  std::deque<failure> entries_{failure{0, 0, {}}};  // value 0 is never an error
};

lookup_category_impl& category_impl() {
  static lookup_category_impl* c = new lookup_category_impl;  // errors may outlive static destruction
  return *c;
}

}  // namespace

resolver_stats resolver_usage() noexcept { return the_resolver().usage(); }

}  // namespace detail

const coded_error_category& lookup_category() noexcept { return detail::category_impl(); }

std::error_code lookup_error(int eai, std::string_view host, int sys_errno) {
  return {detail::category_impl().intern(eai, eai == EAI_SYSTEM ? sys_errno : 0, host), detail::category_impl()};
}

std::string lookup_reason(const std::error_code& ec) {
  if (ec.category() != lookup_category()) return {};
  const detail::failure f = detail::category_impl().at(ec.value());
  if (f.eai == EAI_SYSTEM && f.sys_errno) return std::strerror(f.sys_errno);
  return ::gai_strerror(f.eai);
}

void lookup_request::cancel() noexcept {
  if (!state_ || state_->done) return;
  detail::settle(*state_);
  state_->callback = nullptr;
}

bool lookup_request::pending() const noexcept { return state_ && !state_->done; }

lookup_request lookup(std::string_view host, const lookup_options& options, lookup_callback callback) {
  loop& l = options.event_loop ? *options.event_loop : loop::current();
  auto st = std::make_shared<detail::lookup_state>();
  st->host = std::string(host);
  st->options = options;
  st->callback = std::move(callback);
  st->target = &l;
  // The loop waits for the answer; if it goes first, the answer is dropped.
  st->hook.owner = st.get();
  st->hook.fn = [](loop::close_hook& hook, loop&) noexcept {
    auto* s = static_cast<detail::lookup_state*>(hook.owner);
    s->done = true;
    s->callback = nullptr;
    std::lock_guard lock(s->mutex);
    s->target = nullptr;
  };
  l.add_close_hook(st->hook);
  l.hold();
  detail::the_resolver().submit(st);
  return lookup_request(std::move(st));
}

}  // namespace sluice::net
