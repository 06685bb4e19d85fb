// A stream used from a second thread: with SLUICE_ASSERTS (debug builds, or
// -DSLUICE_ASSERTS=1) write/end/destroy/push/read from a thread other than
// the one that first used the stream abort with a message (issue 10). Each
// case runs in a forked child, which must die of SIGABRT and say why. In a
// release build without SLUICE_ASSERTS there is no check: the cases say so.
#include "support/printers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <functional>
#include <string>
#include <thread>

#include "sluice/base/assert.h"
#include "support/harness.h"
#include "support/recording_source.h"

using namespace sluice;
using sluice::test::harness;
using sluice::test::readable_harness;

namespace {

struct child_result {
  int signal = 0;  // the signal that ended it, or 0
  int status = -1; // its exit status, when no signal ended it
  std::string err; // what it wrote to stderr
};

// Runs `body` in a forked child with stderr into a pipe; the child exits 0
// when body returns.
child_result run_in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // doctest's handler would report the abort as this test's crash, from
    // the child; the parent is the one that checks.
    std::signal(SIGABRT, SIG_DFL);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    body();
    ::_exit(0);
  }
  ::close(fds[1]);
  child_result r;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n > 0);
    r.err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  else
    r.status = WEXITSTATUS(status);
  return r;
}

// The child uses the stream on its main thread, then calls `misuse` from a
// second thread while the first waits for it.
void check_second_thread_dies(const std::function<void(harness&, readable_harness&)>& misuse, const char* call) {
#if SLUICE_ASSERTS
  const child_result r = run_in_child([&] {
    harness h;
    readable_harness rh({}, h.log, h.loop);
    h.w->write("a");
    rh.r->push("b");
    std::thread t([&] { misuse(h, rh); });
    t.join();
  });
  CAPTURE(r.err);
  CHECK(r.signal == SIGABRT);
  CHECK(r.err.find(std::string("sluice: ") + call + " called from a thread other than the stream's") !=
        std::string::npos);
#else
  (void)misuse;
  (void)call;
  MESSAGE("built without SLUICE_ASSERTS: streams do not check their thread");
#endif
}

}  // namespace

TEST_CASE("write() from a second thread aborts with a message") {
  check_second_thread_dies([](harness& h, readable_harness&) { h.w->write("x"); }, "writable::write()");
}

TEST_CASE("end() from a second thread aborts with a message") {
  check_second_thread_dies([](harness& h, readable_harness&) { h.w->end(); }, "writable::end()");
}

TEST_CASE("destroy() of a writable from a second thread aborts with a message") {
  check_second_thread_dies([](harness& h, readable_harness&) { h.w->destroy(); }, "writable::destroy()");
}

TEST_CASE("push() from a second thread aborts with a message") {
  check_second_thread_dies([](harness&, readable_harness& rh) { rh.r->push("x"); }, "readable::push()");
}

TEST_CASE("read() from a second thread aborts with a message") {
  check_second_thread_dies([](harness&, readable_harness& rh) { (void)rh.r->read(); }, "readable::read()");
}

TEST_CASE("destroy() of a readable from a second thread aborts with a message") {
  check_second_thread_dies([](harness&, readable_harness& rh) { rh.r->destroy(); }, "readable::destroy()");
}

TEST_CASE("a stream made on one thread and used only on another is not misuse") {
  // The first call claims the stream, so handing a stream to the thread that
  // runs its loop before using it is fine.
  const child_result r = run_in_child([] {
    harness h;
    readable_harness rh({}, h.log, h.loop);
    std::thread t([&] {
      h.write("a", false);
      h.complete();
      h.end(false);
      rh.push("b");
      rh.read();
      rh.r->destroy();
      h.run();
    });
    t.join();
  });
  CAPTURE(r.err);
  CHECK(r.signal == 0);
  CHECK(r.status == 0);
}
