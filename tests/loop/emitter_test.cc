// emitter: Node's EventEmitter rules for on/once/off/emit, as streams use them.
#include "support/printers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/loop/emitter.h"
#include "sluice/base/errors.h"
#include "support/alloc_counter.h"

using sluice::emitter;
using sluice::event;
using sluice::event_arg;
using sluice::listener_id;

namespace {

// Swaps in a recording unhandled-error handler for the life of the object.
struct unhandled_capture {
  static inline int calls = 0;
  static inline std::error_code last;
  static void handler(const std::error_code& ec) noexcept {
    ++calls;
    last = ec;
  }
  sluice::unhandled_error_handler old;
  unhandled_capture() : old(sluice::set_unhandled_error_handler(&handler)) {
    calls = 0;
    last.clear();
  }
  ~unhandled_capture() { sluice::set_unhandled_error_handler(old); }
};

}  // namespace

TEST_CASE("emit with no listener returns false") {
  emitter e;
  CHECK_FALSE(e.emit(event::drain));
  CHECK_FALSE(e.emit(event::finish));
  CHECK(e.listener_count(event::drain) == 0);
}

TEST_CASE("emit with a listener calls it and returns true") {
  emitter e;
  int calls = 0;
  e.on(event::drain, [&] { ++calls; });
  CHECK(e.emit(event::drain));
  CHECK(calls == 1);
  CHECK_FALSE(e.emit(event::finish));  // other events are unaffected
  CHECK(calls == 1);
}

TEST_CASE("listeners run in the order they were added, once listeners only once") {
  emitter e;
  std::string order;
  e.on(event::drain, [&] { order += 'A'; });
  e.on(event::drain, [&] { order += 'B'; });
  e.once(event::drain, [&] { order += 'C'; });
  e.on(event::drain, [&] { order += 'D'; });
  e.emit(event::drain);
  CHECK(order == "ABCD");
  e.emit(event::drain);
  CHECK(order == "ABCDABD");
}

TEST_CASE("a once listener as the only listener is called once") {
  emitter e;
  int calls = 0;
  e.once(event::finish, [&] { ++calls; });
  CHECK(e.listener_count(event::finish) == 1);
  CHECK(e.emit(event::finish));
  CHECK_FALSE(e.emit(event::finish));
  CHECK(calls == 1);
  CHECK(e.listener_count(event::finish) == 0);
}

TEST_CASE("off removes one listener and says whether it found it") {
  emitter e;
  std::string order;
  const listener_id a = e.on(event::drain, [&] { order += 'A'; });
  const listener_id b = e.on(event::drain, [&] { order += 'B'; });
  CHECK(a != b);
  CHECK_FALSE(e.off(event::finish, a));  // right id, wrong event
  CHECK(e.off(event::drain, a));
  CHECK_FALSE(e.off(event::drain, a));  // already gone
  e.emit(event::drain);
  CHECK(order == "B");
  CHECK(e.off(event::drain, b));
  CHECK_FALSE(e.emit(event::drain));
  CHECK(order == "B");
}

TEST_CASE("a listener added after off of the first still runs after the older ones") {
  emitter e;
  std::string order;
  const listener_id a = e.on(event::drain, [&] { order += 'A'; });
  e.on(event::drain, [&] { order += 'B'; });
  e.off(event::drain, a);
  e.on(event::drain, [&] { order += 'C'; });
  e.emit(event::drain);
  CHECK(order == "BC");
}

TEST_CASE("a once listener is removed before it is called") {
  emitter e;
  std::size_t count_inside = 99;
  int calls = 0;
  e.once(event::drain, [&] {
    ++calls;
    count_inside = e.listener_count(event::drain);
    e.emit(event::drain);  // must not reach this listener again
  });
  e.emit(event::drain);
  CHECK(calls == 1);
  CHECK(count_inside == 0);
}

TEST_CASE("a listener added during an emit is called by the next emit, not by that one") {
  emitter e;
  std::string order;
  bool added = false;
  auto adder = [&] {
    order += 'A';
    if (!added) {
      added = true;
      e.on(event::drain, [&] { order += 'N'; });
    }
  };
  SUBCASE("one listener (inline slot)") { e.on(event::drain, adder); }
  SUBCASE("several listeners") {
    e.on(event::drain, adder);
    e.on(event::drain, [&] { order += 'B'; });
  }
  e.emit(event::drain);
  CHECK(order.find('N') == std::string::npos);
  order.clear();
  e.emit(event::drain);
  CHECK(order.back() == 'N');
  CHECK(order.find('N') == order.size() - 1);
}

TEST_CASE("a listener removed during an emit is still called by that emit") {
  // Node's rule: emit() calls the listeners present when it started.
  emitter e;
  std::string order;
  listener_id b = 0;
  e.on(event::drain, [&] {
    order += 'A';
    e.off(event::drain, b);
  });
  b = e.on(event::drain, [&] { order += 'B'; });
  e.emit(event::drain);
  CHECK(order == "AB");
  CHECK(e.listener_count(event::drain) == 1);
  e.emit(event::drain);
  CHECK(order == "ABA");
}

TEST_CASE("a listener removed from inside another event's emit is gone") {
  emitter e;
  int close_calls = 0;
  bool removed = false;
  listener_id on_close = 0;
  auto remover = [&] { removed = e.off(event::close, on_close); };
  SUBCASE("the remover was added first and is alone on its event") {
    e.on(event::finish, remover);
    on_close = e.on(event::close, [&] { ++close_calls; });
  }
  SUBCASE("the remover was added second") {
    on_close = e.on(event::close, [&] { ++close_calls; });
    e.on(event::finish, remover);
  }
  SUBCASE("the remover shares its event") {
    e.on(event::finish, remover);
    e.on(event::finish, [] {});
    on_close = e.on(event::close, [&] { ++close_calls; });
  }
  e.emit(event::finish);
  CHECK(removed);
  CHECK(e.listener_count(event::close) == 0);
  CHECK_FALSE(e.emit(event::close));
  CHECK(close_calls == 0);
}

TEST_CASE("a listener can remove itself") {
  emitter e;
  int calls = 0;
  listener_id self = 0;
  bool removed = false;
  auto remove_self = [&] {
    ++calls;
    removed = e.off(event::drain, self);
  };
  std::size_t others = 0;
  SUBCASE("as the only listener") { self = e.on(event::drain, remove_self); }
  SUBCASE("as the only listener, after an emit of several") {
    const listener_id other = e.on(event::finish, [] {});
    e.on(event::finish, [] {});
    e.emit(event::finish);
    e.off(event::finish, other);
    self = e.on(event::drain, remove_self);
  }
  SUBCASE("among several listeners") {
    self = e.on(event::drain, remove_self);
    e.on(event::drain, [] {});
    others = 1;
  }
  e.emit(event::drain);
  CHECK(calls == 1);
  CHECK(removed);
  CHECK(e.listener_count(event::drain) == others);
  e.emit(event::drain);
  CHECK(calls == 1);
}

TEST_CASE("an emit nested inside a listener runs to completion first") {
  emitter e;
  std::string order;
  int depth = 0;
  e.on(event::drain, [&] {
    order += "1";
    if (depth++ == 0) e.emit(event::drain);
  });
  e.on(event::drain, [&] { order += "2"; });
  e.on(event::finish, [&] { order += "f"; });
  e.once(event::close, [&] {
    order += "c";
    e.emit(event::finish);
    order += "/c";
  });
  e.emit(event::drain);
  CHECK(order == "1122");
  order.clear();
  e.emit(event::close);
  CHECK(order == "cf/c");
}

TEST_CASE("a nested emit does not call a listener removed by the outer emit, which still calls it") {
  emitter e;
  std::string order;
  listener_id b = 0;
  bool nested = false;
  e.on(event::drain, [&] {
    order += 'A';
    if (!nested) {
      nested = true;
      e.off(event::drain, b);
      e.emit(event::drain);  // sees A only
    }
  });
  b = e.on(event::drain, [&] { order += 'B'; });
  e.emit(event::drain);
  CHECK(order == "AAB");
}

TEST_CASE("prepend_listener runs before the listeners already added, newest first") {
  emitter e;
  std::string order;
  e.on(event::error, [&] { order += 'A'; });
  e.on(event::error, [&] { order += 'B'; });
  e.prepend_listener(event::error, [&] { order += 'P'; });
  e.prepend_listener(event::error, [&] { order += 'Q'; });
  e.on(event::error, [&] { order += 'C'; });
  e.emit(event::error, event_arg{});
  CHECK(order == "QPABC");
  CHECK(e.listener_count(event::error) == 5);
}

TEST_CASE("a prepended listener is the first even when it is the only one") {
  emitter e;
  int calls = 0;
  const listener_id id = e.prepend_listener(event::drain, [&] { ++calls; });
  e.emit(event::drain);
  CHECK(calls == 1);
  CHECK(e.off(event::drain, id));
  CHECK_FALSE(e.off(event::drain, id));
  CHECK_FALSE(e.emit(event::drain));
  e.on(event::drain, [&] { calls += 10; });
  e.emit(event::drain);
  CHECK(calls == 11);
}

TEST_CASE("a listener prepended during an emit waits for the next emit") {
  emitter e;
  std::string order;
  bool added = false;
  e.on(event::drain, [&] {
    order += 'A';
    if (!added) {
      added = true;
      e.prepend_listener(event::drain, [&] { order += 'P'; });
    }
  });
  e.on(event::drain, [&] { order += 'B'; });
  e.emit(event::drain);
  CHECK(order == "AB");
  e.emit(event::drain);
  CHECK(order == "ABPAB");
}

TEST_CASE("a prepended listener can remove itself and the others during an emit") {
  emitter e;
  std::string order;
  listener_id self = 0, other = 0;
  other = e.on(event::drain, [&] { order += 'A'; });
  self = e.prepend_listener(event::drain, [&] {
    order += 'P';
    e.off(event::drain, self);
    e.off(event::drain, other);
  });
  e.emit(event::drain);  // A was present when the emit started
  CHECK(order == "PA");
  e.emit(event::drain);
  CHECK(order == "PA");
  CHECK(e.listener_count(event::drain) == 0);
}

TEST_CASE("remove_all_listeners removes prepended listeners too") {
  emitter e;
  e.prepend_listener(event::error, [] {});
  e.on(event::error, [] {});
  e.remove_all_listeners(event::error);
  CHECK(e.listener_count(event::error) == 0);
}

TEST_CASE("listener_count counts the live listeners of one event") {
  emitter e;
  CHECK(e.listener_count(event::error) == 0);
  const listener_id a = e.on(event::error, [] {});
  e.once(event::error, [] {});
  e.on(event::drain, [] {});
  CHECK(e.listener_count(event::error) == 2);
  CHECK(e.listener_count(event::drain) == 1);
  e.off(event::error, a);
  CHECK(e.listener_count(event::error) == 1);
  e.remove_all_listeners(event::error);
  CHECK(e.listener_count(event::error) == 0);
  CHECK(e.listener_count(event::drain) == 1);
}

TEST_CASE("remove_all_listeners during an emit still lets that emit finish") {
  emitter e;
  std::string order;
  e.on(event::drain, [&] {
    order += 'A';
    e.remove_all_listeners(event::drain);
  });
  e.on(event::drain, [&] { order += 'B'; });
  e.emit(event::drain);
  CHECK(order == "AB");
  CHECK_FALSE(e.emit(event::drain));
  CHECK(order == "AB");
}

TEST_CASE("an error with no listener goes to the unhandled-error handler") {
  unhandled_capture capture;
  emitter e;
  event_arg arg;
  arg.error = sluice::make_error_code(sluice::errc::write_after_end);
  CHECK_FALSE(e.emit(event::error, arg));
  CHECK(unhandled_capture::calls == 1);
  CHECK(unhandled_capture::last == sluice::errc::write_after_end);

  // Other events with no listener do not reach it.
  e.emit(event::drain);
  CHECK(unhandled_capture::calls == 1);
}

TEST_CASE("an error with a listener does not reach the unhandled-error handler") {
  unhandled_capture capture;
  emitter e;
  std::error_code got;
  e.on(event::error, [&](std::error_code ec) { got = ec; });
  event_arg arg;
  arg.error = std::make_error_code(std::errc::broken_pipe);
  CHECK(e.emit(event::error, arg));
  CHECK(got == std::errc::broken_pipe);
  CHECK(unhandled_capture::calls == 0);
}

TEST_CASE("set_unhandled_error_handler returns the previous handler and null restores the default") {
  const auto original = sluice::set_unhandled_error_handler(&unhandled_capture::handler);
  CHECK((original != nullptr));
  CHECK((sluice::set_unhandled_error_handler(nullptr) == &unhandled_capture::handler));
  // null installed the default printer, which is what was there at first.
  CHECK((sluice::set_unhandled_error_handler(original) == original));
}

TEST_CASE("an error listener receives the error_code") {
  emitter e;
  std::error_code got;
  e.on(event::error, [&](std::error_code ec) { got = ec; });
  event_arg arg;
  arg.error = sluice::user_error("disk on fire");
  e.emit(event::error, arg);
  CHECK(got == sluice::user_error("disk on fire"));
  CHECK(got.message() == "disk on fire");
}

TEST_CASE("a data listener receives the chunk as a string_view") {
  emitter e;
  std::string got;
  const void* where = nullptr;
  e.on(event::data, [&](std::string_view chunk) {
    got = chunk;
    where = chunk.data();
  });
  const std::string chunk = "hello";
  event_arg arg;
  arg.chunk = chunk;
  e.emit(event::data, arg);
  CHECK(got == "hello");
  CHECK(where == chunk.data());  // a view, not a copy
}

TEST_CASE("a listener may take the whole event_arg") {
  emitter e;
  int x = 0;
  const event_arg* seen = nullptr;
  e.on(event::pipe, [&](const event_arg& a) { seen = &a; });
  event_arg arg;
  arg.source = &x;
  e.emit(event::pipe, arg);
  REQUIRE(seen == &arg);
  CHECK(seen->source == &x);
}

TEST_CASE("a listener with a large capture works and is destroyed when removed") {
  emitter e;
  auto token = std::make_shared<int>(7);
  std::array<char, 200> big{};
  big.fill('x');
  big[199] = 'y';
  std::string seen;
  const listener_id id = e.on(event::drain, [&seen, big, token] { seen = std::string(big.data() + 195, 5); });
  CHECK(token.use_count() == 2);
  e.emit(event::drain);
  CHECK(seen == "xxxxy");
  e.off(event::drain, id);
  CHECK(token.use_count() == 1);
}

TEST_CASE("listeners are destroyed with the emitter") {
  auto token = std::make_shared<int>(7);
  {
    emitter e;
    std::array<char, 64> big{};
    e.on(event::drain, [token] {});
    e.on(event::drain, [token, big] {});
    e.once(event::finish, [token] {});
    CHECK(token.use_count() == 4);
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("event names are spelled as Node spells them") {
  using sluice::to_string;
  CHECK(to_string(event::drain) == "drain");
  CHECK(to_string(event::finish) == "finish");
  CHECK(to_string(event::error) == "error");
  CHECK(to_string(event::close) == "close");
  CHECK(to_string(event::prefinish) == "prefinish");
  CHECK(to_string(event::pipe) == "pipe");
  CHECK(to_string(event::unpipe) == "unpipe");
  CHECK(to_string(event::end) == "end");
  CHECK(to_string(event::data) == "data");
  CHECK(to_string(event::readable) == "readable");
  CHECK(to_string(event::pause) == "pause");
  CHECK(to_string(event::resume) == "resume");
}

TEST_CASE("adding the first listener and emitting to it make no heap allocation") {
  emitter e;
  int calls = 0;
  int* counter = &calls;
  const std::size_t before_on = sluice::test::allocation_count();
  e.on(event::drain, [counter] { ++*counter; });
  const std::size_t after_on = sluice::test::allocation_count();
  for (int i = 0; i < 1000; ++i) e.emit(event::drain);
  const std::size_t after_emit = sluice::test::allocation_count();
  CHECK(after_on - before_on == 0);
  CHECK(after_emit - after_on == 0);
  CHECK(calls == 1000);
}

TEST_CASE("an emitter allocates nothing until its second listener") {
  const std::size_t before = sluice::test::allocation_count();
  std::optional<emitter> e(std::in_place);
  e->on(event::drain, [] {});
  const std::size_t first = sluice::test::allocation_count();
  e->on(event::finish, [] {});
  const std::size_t second = sluice::test::allocation_count();
  CHECK(first - before == 0);
  CHECK(second - first > 0);
  e->emit(event::drain);
}

TEST_CASE("emitting to several listeners makes no heap allocation") {
  emitter e;
  int calls = 0;
  e.on(event::drain, [&calls] { ++calls; });
  e.on(event::drain, [&calls] { ++calls; });
  e.on(event::drain, [&calls] { ++calls; });
  const std::size_t before = sluice::test::allocation_count();
  for (int i = 0; i < 100; ++i) e.emit(event::drain);
  const std::size_t after = sluice::test::allocation_count();
  CHECK(after - before == 0);
  CHECK(calls == 300);
}

// The policy for a listener that throws: emit() is noexcept, so the program
// ends with std::terminate, as an uncaught exception in a Node listener ends
// the process. Checked in a child process, which must die of SIGABRT.
TEST_CASE("a listener that throws ends the program with std::terminate") {
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::set_terminate([] { std::_Exit(42); });
    emitter e;
    e.on(event::drain, [] { throw std::runtime_error("listener failed"); });
    e.emit(event::drain);
    std::_Exit(0);  // not reached: the throw cannot leave emit()
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
}
