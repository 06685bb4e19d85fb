// The event emitter that streams inherit: Node's EventEmitter reduced to what
// streams need, at the cost of about one indirect call per emit.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "sluice/base/function.h"

namespace sluice {

/// Stream events, spelled as Node's event strings.
enum class event : std::uint8_t {
  drain, finish, error, close, prefinish, pipe, unpipe, end, data, readable, pause, resume,
  // net's (sluice/net/): a socket's and a server's own events.
  connect, ready, timeout, listening, connection, lookup,
  // tls's (sluice/tls/): Node's secureConnect, secure, secureConnection and
  // tlsClientError.
  secure_connect, secure, secure_connection, tls_client_error,
  count_  // not an event: the number of events
};
inline constexpr int event_count = static_cast<int>(event::count_);
static_assert(event_count <= 32, "emitter keeps one bit per event in a 32-bit mask");

/// "drain", "finish", ... as Node spells them.
std::string_view to_string(event ev) noexcept;

/// What an event carries: `error` its error, `data` its chunk, `pipe` and
/// `unpipe` the source stream (a sluice::readable*), `connection` the new
/// socket (a sluice::net::socket*), a socket's `close` its error when it
/// closed because of one (Node's hadError), a socket's `lookup` Node's
/// (err, address, family, host): `error` the lookup's error, `chunk` the
/// address, `source` a const sluice::net::lookup_event* with all four.
/// Unused fields are empty.
struct event_arg {
  std::error_code error;
  std::string_view chunk;
  void* source = nullptr;
  /// `unpipe` only: Node's unpipeInfo.hasUnpiped, shared by the listeners of
  /// one emit, so that only the first pipe to that destination cleans up.
  bool* has_unpiped = nullptr;
};

/// The argument of events that carry nothing; made once, so that emit(ev)
/// builds no std::error_code per call.
inline const event_arg no_arg{};

using listener = inline_function<void(const event_arg&), 16>;
using listener_id = std::uint32_t;

/// Called for an `error` emitted with no `error` listener. Node throws there,
/// which would end a C++ program on any I/O error; sluice instead calls this
/// handler, whose default prints "sluice: unhandled 'error' event: <message>"
/// on stderr and returns. The error also stays readable as the stream's
/// errored(). Set it before streams are used; it is not synchronised.
using unhandled_error_handler = void (*)(const std::error_code&) noexcept;
unhandled_error_handler set_unhandled_error_handler(unhandled_error_handler h) noexcept;

/// on/once/off/emit with Node's rules: listeners run in the order they were
/// added; the listeners an emit calls are those present when it started (one
/// added during an emit waits for the next, one removed during an emit is still
/// called by it). An event with no listener costs one branch; the first listener
/// is stored inline, so a stream with one `drain` listener never allocates.
/// Listeners must not throw: emit() is noexcept, so a listener that throws
/// ends the program with std::terminate, as an uncaught exception in a Node
/// listener ends the process. Write callbacks follow the same rule.
///
///     w.on(event::drain, [&] { resume_writing(); });
///     auto id = w.on(event::error, [](std::error_code ec) { log(ec); });
///     w.off(event::error, id);
class emitter {
 public:
  emitter() = default;
  emitter(const emitter&) = delete;
  emitter& operator=(const emitter&) = delete;
  // Virtual: streams derive from it (and transform from duplex), and are
  // owned and deleted through a base pointer (unique_ptr<writable>).
  virtual ~emitter() = default;

  /// Adds a listener; F takes nothing, a std::error_code (for `error`), a
  /// std::string_view (for `data`) or the whole const event_arg&.
  template <class F>
  listener_id on(event ev, F&& f) {
    const listener_id id = add(ev, adapt(std::forward<F>(f)), false);
    listener_added(ev);
    return id;
  }
  /// Like on(), but the listener is removed before its first call.
  template <class F>
  listener_id once(event ev, F&& f) {
    const listener_id id = add(ev, adapt(std::forward<F>(f)), true);
    listener_added(ev);
    return id;
  }
  /// Node: prependListener(). Like on(), but the listener runs before every
  /// listener already added (pipe() puts its 'error' handler first so).
  template <class F>
  listener_id prepend_listener(event ev, F&& f) {
    return add_front(ev, adapt(std::forward<F>(f)));
  }
  /// Removes the listener `id` of `ev`; false if there is none.
  bool off(event ev, listener_id id) noexcept;
  void remove_all_listeners(event ev) noexcept;
  std::size_t listener_count(event ev) const noexcept;

  /// Calls the listeners of `ev`; returns whether there were any (Node's
  /// emit()). An `error` with no listener goes to the unhandled-error handler.
  bool emit(event ev, const event_arg& arg) noexcept {
    const std::uint32_t bit = 1u << static_cast<unsigned>(ev);
    if (!(live_ & bit)) {
      if (ev == event::error) [[unlikely]]
        return emit_none(ev, arg);
      return false;
    }
    if (slow_ & bit) return emit_slow(ev, arg);
    // One persistent listener, stored inline: the common case.
    ++depth_;
    first_.fn(arg);
    if (--depth_ == 0 && dirty_) compact();
    return true;
  }
  bool emit(event ev) noexcept { return emit(ev, no_arg); }

 protected:
  // Streams with their own state derive from emitter; not for deleting through.

  /// Hooks for a stream whose mode follows its listeners, as Node's Readable
  /// overrides on() and removeListener(): whoever adds or removes a listener
  /// (through this class, a derived one or an emitter&), the stream hears of
  /// it. listener_added() follows on() and once() (not prepend_listener(), as
  /// in Node); listener_removed() follows every off(), found or not, and the
  /// removal of a once-listener just before it is called (Node's onceWrapper);
  /// all_listeners_removed() follows remove_all_listeners().
  virtual void listener_added(event /*ev*/) {}
  virtual void listener_removed(event /*ev*/) noexcept {}
  virtual void all_listeners_removed(event /*ev*/) noexcept {}

  /// Wraps any listener shape accepted by on() into a listener.
  template <class F>
  static listener adapt(F&& f) {
    using D = std::decay_t<F>;
    if constexpr (std::is_invocable_v<D&, const event_arg&>)
      return listener(std::forward<F>(f));
    else if constexpr (std::is_invocable_v<D&, std::error_code>)
      return listener([g = D(std::forward<F>(f))](const event_arg& a) mutable { g(a.error); });
    else if constexpr (std::is_invocable_v<D&, std::string_view>)
      return listener([g = D(std::forward<F>(f))](const event_arg& a) mutable { g(a.chunk); });
    else {
      static_assert(std::is_invocable_v<D&>, "a listener takes (), (std::error_code), (std::string_view) or (const event_arg&)");
      return listener([g = D(std::forward<F>(f))](const event_arg&) mutable { g(); });
    }
  }

 private:
  struct entry {
    listener fn;
    listener_id id = 0;
    std::uint32_t added_gen = 0;    // gen_ when added: emits started later see it
    std::uint32_t removed_gen = 0;  // 0 while live; else gen_ at removal
    event ev = event::drain;
    bool once = false;
    bool used = false;  // for first_: holds an entry
  };

  // Listeners past first_, each in an allocation of its own, so that one
  // stays where it is while it is called though the list grows under it (a
  // std::deque did that with a 512-byte chunk and a map: ~600 B for a
  // stream's second listener, on every connection of a server).
  class entry_list {
   public:
    entry& emplace_back() { return *items_.emplace_back(std::make_unique<entry>()); }
    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    entry& operator[](std::size_t i) noexcept { return *items_[i]; }
    entry& front() noexcept { return *items_.front(); }
    void pop_front() noexcept { items_.erase(items_.begin()); }
    template <class Dead>
    void erase_if(Dead dead) noexcept {
      std::erase_if(items_, [&](const std::unique_ptr<entry>& e) { return dead(*e); });
    }
    template <class F>
    void for_each(F&& f) {
      for (auto& e : items_) f(*e);
    }

   private:
    std::vector<std::unique_ptr<entry>> items_;
  };

  listener_id add(event ev, listener fn, bool once);
  listener_id add_front(event ev, listener fn);
  bool emit_none(event ev, const event_arg& arg) noexcept;
  bool emit_slow(event ev, const event_arg& arg) noexcept;
  bool visible(const entry& e, event ev, std::uint32_t gen) const noexcept;
  void remove(entry& e) noexcept;
  void compact() noexcept;
  void recompute_masks() noexcept;

  std::uint32_t live_ = 0;  // bit per event with at least one live listener
  std::uint32_t slow_ = 0;  // bit per event that needs the general path
  std::uint32_t depth_ = 0;  // emits in progress (nesting)
  // Emit generation, see entry. Starts at 1: a removal stamps removed_gen with
  // it, and 0 there means "live".
  std::uint32_t gen_ = 1;
  listener_id next_id_ = 1;
  bool dirty_ = false;       // removed entries wait for depth_ == 0
  entry first_;              // the oldest listener, inline
  // The others, made on first use: a stream with one listener or none needs
  // no more than first_.
  std::unique_ptr<entry_list> rest_;
  // Listeners added by prepend_listener(), newest last: they run back to front,
  // before first_. Made on first use (only pipe() prepends); appending keeps
  // the entries an emit in progress is walking where they are.
  std::unique_ptr<entry_list> front_;
};

}  // namespace sluice
