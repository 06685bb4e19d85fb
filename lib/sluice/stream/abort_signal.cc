// Node's addAbortListener() and addAbortSignal(), for a std::stop_token.
#include "sluice/stream/abort_signal.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/stream/finished.h"

namespace sluice {

namespace {

struct token_group;

}  // namespace

// One registration. Lives while its owner holds the abort_registration.
struct abort_registration::state {
  task listener;
  std::shared_ptr<token_group> group;  // keeps the one stop_callback alive

  // Node: the 'abort' event's listener, once.
  void fire() {
    task t = std::move(listener);
    listener = {};
    if (t) t();
  }
};

namespace {

// The listeners of one token on one loop, behind one std::stop_callback, so
// that they run in the order they were added, as an AbortSignal's do (the
// order in which a stop_source calls its own callbacks is unspecified). A task
// posted from another thread holds only weak_ptrs: it finds a registration
// gone rather than touching a stream deleted since.
struct token_group : std::enable_shared_from_this<token_group> {
  struct on_stop {
    token_group* self;
    void operator()() const noexcept { self->stopped(); }
  };

  std::stop_token token;
  loop* home = nullptr;
  std::thread::id home_thread;
  std::vector<std::weak_ptr<abort_registration::state>> listeners;  // in the order added
  std::atomic<bool> armed{false};  // false while the stop_callback is being made
  // Last, so that it goes first: ~stop_callback waits for a callback running
  // on another thread, which still reads `home` and weak_from_this().
  std::optional<std::stop_callback<on_stop>> callback;

  ~token_group() { callback.reset(); }

  void fire_all() {
    auto keep = shared_from_this();  // a listener may dispose of the others
    const auto now = listeners;      // those present when the abort came
    for (const auto& w : now)
      if (auto s = w.lock()) s->fire();
  }

  // On the thread that called request_stop().
  void stopped() noexcept {
    if (armed.load() && std::this_thread::get_id() == home_thread) return fire_all();
    home->post([w = weak_from_this()] {
      if (auto g = w.lock()) g->fire_all();
    });
  }
};

// This thread's groups: its streams' loops all run here.
std::shared_ptr<token_group> group_for(const std::stop_token& token, loop& l) {
  thread_local std::vector<std::weak_ptr<token_group>> groups;
  std::shared_ptr<token_group> found;
  std::erase_if(groups, [&](const std::weak_ptr<token_group>& w) {
    auto g = w.lock();
    if (!g) return true;
    if (!found && g->home == &l && g->token == token) found = std::move(g);
    return false;
  });
  if (found) return found;
  auto g = std::make_shared<token_group>();
  g->token = token;
  g->home = &l;
  g->home_thread = std::this_thread::get_id();
  groups.push_back(g);
  g->callback.emplace(token, token_group::on_stop{g.get()});
  g->armed = true;
  return g;
}

}  // namespace

abort_registration add_abort_listener(std::stop_token token, loop& l, task listener) {
  abort_registration r;
  if (!token.stop_possible() && !token.stop_requested()) return r;
  auto s = std::make_shared<abort_registration::state>();
  s->listener = std::move(listener);
  r.state_ = s;
  if (token.stop_requested()) {
    // Node: queueMicrotask(() => listener()); a disposed registration never calls it.
    l.queue_microtask([w = std::weak_ptr(s)] {
      if (auto s = w.lock()) s->fire();
    });
    return r;
  }
  s->group = group_for(token, l);
  auto& ls = s->group->listeners;
  std::erase_if(ls, [](const auto& w) { return w.expired(); });
  ls.push_back(s);
  return r;
}

void add_abort_signal(std::stop_token token, stream_ref stream) {
  // Node: onAbort, stream.destroy(new AbortError(undefined, { cause: signal.reason })).
  auto on_abort = [stream] { stream.destroy(make_error_code(errc::aborted)); };
  if (token.stop_requested()) {
    on_abort();
    return;
  }
  if (!token.stop_possible()) return;
  // Node: eos(stream, disposable[SymbolDispose]). The registration lives in
  // finished()'s listeners: it goes when they run, or with the stream.
  auto reg = std::make_shared<abort_registration>(add_abort_listener(std::move(token), stream.event_loop(), on_abort));
  finished(stream, [reg](std::error_code) { reg->dispose(); });
}

}  // namespace sluice
