// inline_function: a move-only std::function whose small targets live inside
// the object. Write callbacks, listeners and loop tasks are stored by the
// million on hot paths; std::function would allocate for any capture larger
// than two pointers on libstdc++, and copying is never needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace sluice {

template <class Signature, std::size_t InlineSize = 16>
class inline_function;

/// A move-only callable holding targets of up to `InlineSize` bytes without
/// allocating; larger targets go to the heap. Calling an empty one is a bug
/// (asserted in debug builds, like dereferencing a null pointer).
///
///     inline_function<void(int)> f = [&sum](int x) { sum += x; };
///     f(2);
template <class R, class... Args, std::size_t InlineSize>
class inline_function<R(Args...), InlineSize> {
 public:
  inline_function() noexcept = default;
  inline_function(std::nullptr_t) noexcept {}

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, inline_function> &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  inline_function(F&& f) {  // NOLINT: implicit like std::function
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D>) {
      if (f == nullptr) return;
    }
    if constexpr (fits_inline<D>) {
      // Trivial targets (lambdas capturing pointers and integers) need no
      // manager: moving is a memcpy and destroying is nothing. Their bytes
      // past the target are zero, so that same_target() can compare all.
      constexpr bool trivial = std::is_trivially_copyable_v<D> && std::is_trivially_destructible_v<D>;
      if constexpr (trivial) std::memset(storage_, 0, sizeof storage_);
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      invoke_ = inline_invoker<D>();
      if constexpr (!trivial) manage_ = &manage_inline<D>;
    } else {
      D* p = new D(std::forward<F>(f));
      std::memcpy(storage_, &p, sizeof p);
      invoke_ = heap_invoker<D>();
      manage_ = &manage_heap<D>;
    }
  }

  inline_function(inline_function&& o) noexcept { take(o); }
  inline_function& operator=(inline_function&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  inline_function& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  inline_function(const inline_function&) = delete;
  inline_function& operator=(const inline_function&) = delete;
  ~inline_function() { reset(); }

  /// Move-assignment for a target known to be empty (a recycled request's
  /// callback): skips the destruction of the old target.
  void assign_empty(inline_function&& o) noexcept { take(o); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }

  /// True when both are empty, or both hold a trivially copyable target of
  /// one type with the same bytes (the same function pointer, a lambda with
  /// the same captures): calling one is then calling the other. False
  /// means "not known to be the same": other targets never compare equal.
  bool same_target(const inline_function& o) const noexcept {
    if (invoke_ != o.invoke_) return false;
    if (!invoke_) return true;
    return !manage_ && same_bytes(o);
  }
  /// same_target() for an `o` known to hold a trivially copyable target
  /// (copyable()): no test for empty ones.
  bool same_copyable_target(const inline_function& o) const noexcept {
    return invoke_ == o.invoke_ && !manage_ && same_bytes(o);
  }
  /// Whether the target is trivially copyable: one that same_target() can
  /// match, and call_copy() call.
  bool copyable() const noexcept { return invoke_ && !manage_; }
  /// Calls a copy of a trivially copyable target (copyable()), which this
  /// one keeps as it was: as many calls as copies of one callback, each
  /// called once.
  R call_copy(Args... args) const {
    alignas(std::max_align_t) std::byte copy[sizeof storage_];
    std::memcpy(copy, storage_, sizeof copy);
    if constexpr (counted)
      return invoke_(copy, 1, std::forward<Args>(args)...);
    else
      return invoke_(copy, std::forward<Args>(args)...);
  }
  /// A copy of a trivially copyable target (copyable()).
  inline_function copy() const noexcept {
    inline_function c;
    c.invoke_ = invoke_;
    std::memcpy(c.storage_, storage_, sizeof storage_);
    return c;
  }

  R operator()(Args... args) const {
    if constexpr (counted)
      return invoke_(const_cast<std::byte*>(storage_), 1, std::forward<Args>(args)...);
    else
      return invoke_(const_cast<std::byte*>(storage_), std::forward<Args>(args)...);
  }

  /// Calls the target n (>= 1) times: n - 1 copies of a trivially copyable
  /// target (copyable()), each called once, then the target itself, as
  /// call_copy() n - 1 times and then operator() would. The loop runs in the
  /// target's own code, where its body is inlined: a stream calls back a run
  /// of n writes that share one callback with one indirect call, not n.
  /// Only for completion callbacks (void, with arguments that are copied
  /// cheaply: see `counted`); any other target takes n == 1.
  void call_n(std::size_t n, Args... args) const
    requires(std::is_void_v<R> && sizeof...(Args) > 0 &&
             (std::is_trivially_copyable_v<std::remove_reference_t<Args>> && ...))
  {
    invoke_(const_cast<std::byte*>(storage_), n, std::forward<Args>(args)...);
  }

  void reset() noexcept {
    if (manage_) manage_(op::destroy, storage_, nullptr);
    invoke_ = nullptr;
    manage_ = nullptr;
  }

 private:
  enum class op { move, destroy };
  // Completion callbacks (void(std::error_code) and the like) are invoked
  // with a count (call_n()); the one more argument costs a single call one
  // register move and a compare. Listeners and loop tasks (void()) and
  // anything that returns a value keep the plain signature.
  static constexpr bool counted = std::is_void_v<R> && sizeof...(Args) > 0 &&
                                  (std::is_trivially_copyable_v<std::remove_reference_t<Args>> && ...);
  using invoke_fn = std::conditional_t<counted, R (*)(std::byte*, std::size_t, Args&&...), R (*)(std::byte*, Args&&...)>;
  using manage_fn = void (*)(op, std::byte* self, std::byte* from) noexcept;

  template <class D>
  static constexpr bool fits_inline = sizeof(D) <= InlineSize &&
                                      alignof(D) <= alignof(std::max_align_t) &&
                                      std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static R invoke_inline(std::byte* s, Args&&... args) {
    return (*std::launder(reinterpret_cast<D*>(s)))(std::forward<Args>(args)...);
  }
  template <class D>
  static R invoke_heap(std::byte* s, Args&&... args) {
    D* p;
    std::memcpy(&p, s, sizeof p);
    return (*p)(std::forward<Args>(args)...);
  }
  // The counted twins (see call_n()). Only a trivially copyable target is
  // called more than once, each time as a fresh copy, so that a mutable
  // lambda's state is each call's own, as with call_copy().
  template <class D>
  static void invoke_inline_n(std::byte* s, std::size_t n, Args&&... args) {
    D& f = *std::launder(reinterpret_cast<D*>(s));
    if constexpr (std::is_trivially_copyable_v<D> && std::is_trivially_destructible_v<D>) {
      for (; n > 1; --n) {
        D copy(f);
        copy(static_cast<Args>(args)...);
      }
    }
    f(std::forward<Args>(args)...);
  }
  template <class D>
  static void invoke_heap_n(std::byte* s, std::size_t, Args&&... args) {
    D* p;
    std::memcpy(&p, s, sizeof p);
    (*p)(std::forward<Args>(args)...);
  }
  template <class D>
  static constexpr invoke_fn inline_invoker() noexcept {
    if constexpr (counted)
      return &invoke_inline_n<D>;
    else
      return &invoke_inline<D>;
  }
  template <class D>
  static constexpr invoke_fn heap_invoker() noexcept {
    if constexpr (counted)
      return &invoke_heap_n<D>;
    else
      return &invoke_heap<D>;
  }
  template <class D>
  static void manage_inline(op o, std::byte* self, std::byte* from) noexcept {
    if (o == op::move) {
      D* src = std::launder(reinterpret_cast<D*>(from));
      ::new (static_cast<void*>(self)) D(std::move(*src));
      src->~D();
    } else {
      std::launder(reinterpret_cast<D*>(self))->~D();
    }
  }
  template <class D>
  static void manage_heap(op o, std::byte* self, std::byte* from) noexcept {
    if (o == op::move) {
      std::memcpy(self, from, sizeof(D*));
    } else {
      D* p;
      std::memcpy(&p, self, sizeof p);
      delete p;
    }
  }

  bool same_bytes(const inline_function& o) const noexcept {
    // Word by word, inline: a call to memcmp would cost more than the rest.
    for (std::size_t i = 0; i < sizeof storage_; i += sizeof(std::uint64_t)) {
      std::uint64_t a, b;
      std::memcpy(&a, storage_ + i, sizeof a);
      std::memcpy(&b, o.storage_ + i, sizeof b);
      if (a != b) return false;
    }
    return true;
  }

  void take(inline_function& o) noexcept {
    invoke_ = o.invoke_;
    manage_ = o.manage_;
    if (manage_) {
      manage_(op::move, storage_, o.storage_);
    } else {
      // Copies the whole buffer, of which a small target set only its first
      // bytes: copying indeterminate bytes is allowed, but g++ -O3 -Wall
      // warns about it in every user's build (maybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
      std::memcpy(storage_, o.storage_, sizeof storage_);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    }
    o.invoke_ = nullptr;
    o.manage_ = nullptr;
  }

  invoke_fn invoke_ = nullptr;
  manage_fn manage_ = nullptr;
  alignas(std::max_align_t) std::byte storage_[InlineSize < sizeof(void*) ? sizeof(void*) : InlineSize];
};

}  // namespace sluice
